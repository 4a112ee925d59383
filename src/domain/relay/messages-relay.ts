import type { ChannelConfig } from '../../gateway-config/schema';
import { UpstreamError } from '../../upstream/errors';
import type { MessagesAdapter, MessagesOptions, MessagesStreamEvent, TokenCount } from '../../upstream/messages-adapter';
import { createUpstreamAdapters, type MessagesAdapterRegistry } from '../../upstream/registry';
import { anthropicToChatRequest } from '../../upstream/translate/anthropic-request-to-chat';
import type { AnthropicCountRequest, AnthropicRequest, AnthropicResponse, AnthropicStreamEvent } from '../../upstream/translate/types';
import { costOfUsage, estimateCost } from '../pricing/cost';
import { plainUsage, type TokenUsage } from '../pricing/usage';
import type { RelayCaller } from './caller';
import { endpointEngine, type EndpointOptions, type NamedEventSink, upstreamCallFor } from './endpoint';
import type { StreamDriver, StreamOutcome } from './metered-call';
import { estimatePromptTokens, estimateTokens } from './metering';
import { type ModelRoute, resolveModel } from './resolve';

/**
 * POST /v1/messages through the relay: the same rules as the chat relay (src/domain/relay/relay.ts) for a
 * request in Messages shapes. Resolve the model for the key (403 allowlist, 404 unknown, 400 unpriced), hold
 * the most it can cost (prompt counted locally + max_tokens), try the channels in the router's order with
 * failover until one answers (for a stream: until its first event is in hand), then settle from the upstream's
 * usage, every dimension it reports (src/upstream/usage.ts), or release. Failures and a client that went away
 * mid-stream are never billed. `anthropic` channels answer natively; `openai` channels by translation.
 */


export interface MessagesRelayOptions extends EndpointOptions {
  /** Defaults: anthropic natively, openai by translation over the openai chat adapter. */
  adapters?: MessagesAdapterRegistry;
}

/** Where a Messages stream goes: named SSE events (`event: <name>` + `data: <json>`). */
export type MessagesSink = NamedEventSink;

export type MessagesStreamOutcome = StreamOutcome;

export interface MessagesRelay {
  messages(req: AnthropicRequest, caller: RelayCaller, opts: MessagesOptions): Promise<AnthropicResponse>;
  /** Throws when it fails before the first event (nothing written); once `sink.start()` ran it never throws. */
  messagesStream(req: AnthropicRequest, caller: RelayCaller, opts: MessagesOptions, sink: MessagesSink): Promise<MessagesStreamOutcome>;
  /**
   * POST /v1/messages/count_tokens: the first channel in the router's order answers natively when it can
   * (`anthropic`), else the prompt is counted locally (the same count a hold uses). Never held or billed.
   */
  countTokens(req: AnthropicCountRequest, caller: RelayCaller, opts: MessagesOptions): Promise<TokenCount>;
}

/** The Messages wire error event (what the Anthropic SDK raises mid-stream). */
export function messagesErrorEvent(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/** Blocks the chat translation carries (and so counts); every other block is counted from its JSON. */
const CHAT_BLOCKS = new Set(['text', 'image', 'tool_use', 'tool_result']);
const CHAT_ROLES = new Set(['user', 'assistant', 'system']);

/**
 * Prompt tokens of a Messages request, counted locally like a chat prompt. What the chat translation drops
 * (documents, server-tool blocks, thinking, other roles, non-text tool results) is counted from its JSON on top:
 * a native channel reads it, so a hold may be generous, never short.
 */
export function estimateMessagesPromptTokens(req: AnthropicRequest): number {
  let dropped = 0;
  for (const m of req.messages) {
    if (!CHAT_ROLES.has(m.role)) dropped += estimateTokens(JSON.stringify(m));
    else if (Array.isArray(m.content)) {
      for (const b of m.content) {
        const nonText = b.type === 'tool_result' && Array.isArray(b.content) && b.content.some((c: { type?: unknown }) => c?.type !== 'text');
        if (!CHAT_BLOCKS.has(b.type) || nonText) dropped += estimateTokens(JSON.stringify(b));
      }
    }
  }
  try {
    return estimatePromptTokens(anthropicToChatRequest(req, req.model)) + dropped;
  } catch {
    return estimateTokens(JSON.stringify({ system: req.system, messages: req.messages, tools: req.tools }));
  }
}

function eventTokens(e: AnthropicStreamEvent): number {
  if (e.type !== 'content_block_delta') return 0;
  const d = e.delta as { text?: unknown; partial_json?: unknown; thinking?: unknown };
  const s = [d.text, d.partial_json, d.thinking].find((v) => typeof v === 'string') as string | undefined;
  return s ? estimateTokens(s) : 0;
}

export function createMessagesRelay(opts: MessagesRelayOptions): MessagesRelay {
  const adapters = opts.adapters ?? createUpstreamAdapters().messages;
  const { metered, streamTtl } = endpointEngine(opts);

  const candidates = (route: ModelRoute) => metered.candidates(route, (c) => adapters[c.type] !== undefined, 'messages');
  const adapterOf = (ch: ChannelConfig) => adapters[ch.type] as MessagesAdapter;

  const call = upstreamCallFor;

  function holdAmount(req: AnthropicRequest, route: ModelRoute): { prompt: number; amount: number } {
    const prompt = estimateMessagesPromptTokens(req);
    return { prompt, amount: estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: req.max_tokens }, route.multiplier) };
  }

  function charge(route: ModelRoute, usage: TokenUsage) {
    return { quota: costOfUsage(route.price, usage, route.multiplier), usage };
  }

  return {
    async countTokens(req, caller, mopts) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const channel = candidates(route)[0];
      const native = adapterOf(channel).countTokens;
      if (native) {
        try {
          return await native(req, call(channel, route.model, caller), mopts);
        } catch (err) {
          // An upstream without the endpoint (404, 405) or out of service: count locally.
          if (!(err instanceof UpstreamError) || !(err.retryable || err.status === 404 || err.status === 405)) throw err;
          caller.log?.warn({ channel: channel.name, kind: err.kind }, 'count_tokens upstream failed; counted locally');
        }
      }
      // A count needs no output budget: any max_tokens lets the request be read as a Messages request.
      return { input_tokens: estimateMessagesPromptTokens({ ...req, max_tokens: 1 }) };
    },

    async messages(req, caller, mopts) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const chs = candidates(route);
      const { prompt, amount } = holdAmount(req, route);
      const result = await metered.unary(
        caller,
        route,
        chs,
        { amount, reason: 'messages', ttlSeconds: metered.unaryTtl(chs) },
        (ch) => adapterOf(ch).messages(req, call(ch, route.model, caller), mopts),
        (r) => charge(route, r.usage ?? plainUsage(prompt, estimateTokens(JSON.stringify(r.body.content ?? [])))),
      );
      return result.body;
    },

    messagesStream(req, caller, mopts, sink) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const chs = candidates(route);
      const { prompt, amount } = holdAmount(req, route);
      let usage: () => TokenUsage | null = () => null;
      let completionLocal = 0;
      let stop = JSON.stringify({ type: 'message_stop' });
      const driver: StreamDriver<MessagesStreamEvent> = {
        start: () => sink.start(),
        forward(ev) {
          completionLocal += eventTokens(ev.event);
          // message_stop waits for the settle: a client that saw it may rely on the call being complete.
          if (ev.event.type === 'message_stop') {
            stop = ev.raw ?? JSON.stringify(ev.event);
            return true;
          }
          return sink.send(ev.event.type, ev.raw ?? JSON.stringify(ev.event));
        },
        charge: () => charge(route, usage() ?? plainUsage(prompt, completionLocal)),
        complete: () => sink.send('message_stop', stop),
        fail: (kind) =>
          sink.send(
            'error',
            messagesErrorEvent(
              'api_error',
              kind === 'upstream' ? 'The upstream stream failed before it was complete; the call was not billed' : 'The call could not be billed',
            ),
          ),
        end: () => sink.end(),
      };
      return metered.stream(
        caller,
        route,
        chs,
        { amount, reason: 'messages_stream', ttlSeconds: streamTtl },
        async (ch) => {
          const stream = await adapterOf(ch).messagesStream(req, call(ch, route.model, caller), mopts);
          usage = () => stream.usage();
          return stream;
        },
        driver,
      );
    },
  };
}
