import type { Pool } from 'pg';
import { upstreamModel } from '../../gateway-config/lookup';
import type { ChannelConfig, ChannelType } from '../../gateway-config/schema';
import type { ConfigStore } from '../../gateway-config/store';
import type { ChatRequest, TokenCounts, UpstreamCall } from '../../upstream/adapter';
import { createAnthropicAdapter } from '../../upstream/anthropic-adapter';
import { UpstreamError } from '../../upstream/errors';
import type { MessagesAdapter, MessagesOptions, MessagesStream, MessagesStreamEvent } from '../../upstream/messages-adapter';
import { messagesOverChat } from '../../upstream/messages-over-chat';
import { createOpenAiAdapter } from '../../upstream/openai-adapter';
import { anthropicToChatRequest } from '../../upstream/translate/anthropic-request-to-chat';
import type { AnthropicRequest, AnthropicResponse, AnthropicStreamEvent } from '../../upstream/translate/types';
import { costOfTokens, estimateCost } from '../pricing/cost';
import { ChannelCooldown } from './cooldown';
import { ClientGoneError, EndpointNotSupportedError } from './errors';
import { DEFAULT_MAX_ATTEMPTS, withFailover } from './failover';
import { billable, type CallHold, estimatePromptTokens, estimateTokens, openHold, releaseHold, settleHold } from './metering';
import type { RelayCaller } from './relay';
import { type ModelRoute, resolveModel } from './resolve';
import { orderCandidates } from './router';

/**
 * POST /v1/messages through the relay: the same rules as the chat relay (src/domain/relay/relay.ts) for a
 * request in Messages shapes. Resolve the model for the key (403 allowlist, 404 unknown, 400 unpriced), hold
 * the most it can cost (prompt counted locally + max_tokens), try the channels in the router's order with
 * failover until one answers (for a stream: until its first event is in hand), then settle from the upstream's
 * usage (input_tokens -> prompt, output_tokens -> completion) or release. Failures and a client that went away
 * mid-stream are never billed. `anthropic` channels answer natively; `openai` channels by translation.
 */

export type MessagesAdapterRegistry = Partial<Record<ChannelType, MessagesAdapter>>;

export interface MessagesRelayOptions {
  db: Pool;
  config: ConfigStore;
  /** Share the chat relay's (`relay.cooldown`), so both endpoints see one channel health. */
  cooldown?: ChannelCooldown;
  /** Defaults: anthropic natively, openai by translation over the openai chat adapter. */
  adapters?: MessagesAdapterRegistry;
  maxAttempts?: number;
  streamHoldTtlSeconds?: number;
  random?: () => number;
}

/** Where a Messages stream goes: named SSE events (`event: <name>` + `data: <json>`). */
export interface MessagesSink {
  /** Once, when the first event is in hand: send the status line and headers now. */
  start(): void;
  /** One event; false (or a promise of false) when the client is gone. */
  send(event: string, data: string): boolean | Promise<boolean>;
  end(): void;
}

export type MessagesStreamOutcome =
  | { status: 'completed'; channel: string; quota: number }
  | { status: 'upstream_failed'; channel: string }
  | { status: 'client_gone'; channel: string }
  | { status: 'billing_failed'; channel: string };

export interface MessagesRelay {
  messages(req: AnthropicRequest, caller: RelayCaller, opts: MessagesOptions): Promise<AnthropicResponse>;
  /** Throws when it fails before the first event (nothing written); once `sink.start()` ran it never throws. */
  messagesStream(req: AnthropicRequest, caller: RelayCaller, opts: MessagesOptions, sink: MessagesSink): Promise<MessagesStreamOutcome>;
}

export function defaultMessagesAdapters(): MessagesAdapterRegistry {
  return { anthropic: createAnthropicAdapter(), openai: messagesOverChat(createOpenAiAdapter()) };
}

/** The Messages wire error event (what the Anthropic SDK raises mid-stream). */
export function messagesErrorEvent(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/**
 * Prompt tokens of a Messages request, counted locally like a chat prompt. Blocks chat has no equivalent for
 * (documents, server tools) are counted from their JSON instead: a hold may be generous, never short.
 */
export function estimateMessagesPromptTokens(req: AnthropicRequest): number {
  try {
    return estimatePromptTokens(anthropicToChatRequest(req, req.model) as unknown as ChatRequest);
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
  const adapters = opts.adapters ?? defaultMessagesAdapters();
  const cooldown = opts.cooldown ?? new ChannelCooldown();
  const maxAttempts = opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const streamTtl = opts.streamHoldTtlSeconds ?? 2 * 3600;
  const random = opts.random ?? Math.random;
  const { db } = opts;

  function candidates(route: ModelRoute): ChannelConfig[] {
    const able = route.channels.filter((c) => adapters[c.type] !== undefined);
    if (able.length === 0) throw new EndpointNotSupportedError(route.model, 'messages');
    return orderCandidates(able, cooldown, random);
  }

  function call(channel: ChannelConfig, model: string, caller: RelayCaller): UpstreamCall {
    return { channel, upstreamModel: upstreamModel(channel, model), signal: caller.signal, requestId: caller.requestId };
  }

  function failoverOpts(caller: RelayCaller) {
    return {
      maxAttempts,
      signal: caller.signal,
      onAttemptFailed: (channel: ChannelConfig, err: UpstreamError) =>
        caller.log?.warn({ channel: channel.name, kind: err.kind, status: err.status ?? undefined }, 'upstream attempt failed'),
    };
  }

  async function hold(req: AnthropicRequest, caller: RelayCaller, route: ModelRoute, reason: string, ttlSeconds: number) {
    const prompt = estimateMessagesPromptTokens(req);
    const amount = estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: req.max_tokens }, route.multiplier);
    const h = await openHold(db, { requestId: caller.requestId, tokenId: caller.key.tokenId, accountId: caller.key.accountId, amount, reason, ttlSeconds });
    return { hold: h, prompt };
  }

  async function settle(h: CallHold, caller: RelayCaller, route: ModelRoute, channel: ChannelConfig, isStream: boolean, t: TokenCounts, started: number) {
    const { quota, capped } = billable(costOfTokens(route.price, t, route.multiplier), h);
    if (capped) caller.log?.warn({ held: h.amount, model: route.model }, 'answer cost more than its hold; billed the hold');
    await settleHold(db, h, {
      requestId: caller.requestId,
      model: route.model,
      tokenName: caller.key.name,
      channel: channel.name,
      isStream,
      quota,
      promptTokens: t.promptTokens,
      completionTokens: t.completionTokens,
      latencyMs: Date.now() - started,
    });
    return quota;
  }

  const release = (h: CallHold, caller: RelayCaller) =>
    releaseHold(db, h, (e) => caller.log?.error({ err: e }, 'releasing a hold failed; the sweeper will'));

  return {
    async messages(req, caller, mopts) {
      const started = Date.now();
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const chs = candidates(route);
      const longest = chs.reduce((m, c) => Math.max(m, c.timeout_ms), 0);
      const { hold: h, prompt } = await hold(req, caller, route, 'messages', Math.ceil((longest * Math.min(maxAttempts, chs.length)) / 1000) + 60);
      try {
        const { result, channel } = await withFailover(
          chs,
          cooldown,
          (ch) => (adapters[ch.type] as MessagesAdapter).messages(req, call(ch, route.model, caller), mopts),
          failoverOpts(caller),
        );
        if (caller.signal.aborted) throw new ClientGoneError();
        const usage = result.usage ?? { promptTokens: prompt, completionTokens: estimateTokens(JSON.stringify(result.body.content ?? [])) };
        await settle(h, caller, route, channel, false, usage, started);
        return result.body;
      } catch (err) {
        await release(h, caller);
        throw clientGone(err, caller);
      }
    },

    async messagesStream(req, caller, mopts, sink) {
      const started = Date.now();
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const chs = candidates(route);
      const { hold: h, prompt } = await hold(req, caller, route, 'messages_stream', streamTtl);

      let opened: { stream: MessagesStream; it: AsyncIterator<MessagesStreamEvent>; first: MessagesStreamEvent };
      let channel: ChannelConfig;
      try {
        ({ result: opened, channel } = await withFailover(
          chs,
          cooldown,
          async (ch) => {
            const stream = await (adapters[ch.type] as MessagesAdapter).messagesStream(req, call(ch, route.model, caller), mopts);
            const it = stream[Symbol.asyncIterator]();
            try {
              const first = await it.next();
              if (first.done) throw new UpstreamError('protocol', 'the upstream stream ended before its first event');
              return { stream, it, first: first.value };
            } catch (err) {
              stream.cancel();
              throw err;
            }
          },
          failoverOpts(caller),
        ));
      } catch (err) {
        await release(h, caller);
        throw clientGone(err, caller);
      }

      // First event in hand: from here on no failover, and no exception to the caller.
      sink.start();
      let completionLocal = 0;
      let stop = JSON.stringify({ type: 'message_stop' });
      try {
        let ev = opened.first;
        for (;;) {
          completionLocal += eventTokens(ev.event);
          // message_stop waits for the settle: a client that saw it may rely on the call being complete.
          if (ev.event.type === 'message_stop') stop = ev.raw ?? JSON.stringify(ev.event);
          else {
            const sent = sink.send(ev.event.type, ev.raw ?? JSON.stringify(ev.event));
            if (!(typeof sent === 'boolean' ? sent : await sent) || caller.signal.aborted) throw new ClientGoneError();
          }
          const next = await opened.it.next();
          if (next.done) break;
          ev = next.value;
        }
      } catch (err) {
        opened.stream.cancel();
        await release(h, caller);
        if (err instanceof ClientGoneError || caller.signal.aborted) {
          caller.log?.warn({ channel: channel.name, code: 'write_response_body_failed' }, 'client went away mid-stream; not billed');
          sink.end();
          return { status: 'client_gone', channel: channel.name };
        }
        caller.log?.warn({ channel: channel.name, kind: err instanceof UpstreamError ? err.kind : 'error' }, 'upstream failed mid-stream; not billed');
        if (!(err instanceof UpstreamError)) caller.log?.error({ err }, 'stream relay failed');
        cooldown.recordFailure(channel.name);
        await sink.send('error', messagesErrorEvent('api_error', 'The upstream stream failed before it was complete; the call was not billed'));
        sink.end();
        return { status: 'upstream_failed', channel: channel.name };
      }

      try {
        const usage = opened.stream.usage() ?? { promptTokens: prompt, completionTokens: completionLocal };
        const quota = await settle(h, caller, route, channel, true, usage, started);
        await sink.send('message_stop', stop);
        sink.end();
        return { status: 'completed', channel: channel.name, quota };
      } catch (err) {
        caller.log?.error({ err }, 'settling a stream failed; the hold stays for the sweeper');
        await sink.send('error', messagesErrorEvent('api_error', 'The call could not be billed'));
        sink.end();
        return { status: 'billing_failed', channel: channel.name };
      }
    },
  };
}

function clientGone(err: unknown, caller: RelayCaller): unknown {
  if (err instanceof UpstreamError && (err.kind === 'aborted' || caller.signal.aborted)) return new ClientGoneError();
  return err;
}
