import type { MessagesAdapter, MessagesOptions, MessagesResult, MessagesStreamEvent, MessagesStream, TokenCount } from '../../ports/messages';
import type { AnthropicCountRequest, AnthropicRequest, AnthropicResponse, AnthropicStreamEvent } from '../../translate/types';
import { anthropicToChatRequest } from '../../translate/anthropic-request-to-chat';
import type { NamedEventSink } from '../caller';
import { type CountEndpoint, localUsage, type StreamEndpoint, type UnaryEndpoint } from '../engine';
import { estimatePromptTokens, estimateTokens } from '../metering';

/**
 * POST /v1/messages and /v1/messages/count_tokens: `anthropic` channels natively, `openai` ones by translation
 * over their chat adapter. The request travels with the options of its headers (version, beta, query).
 */
export interface MessagesCall<B = AnthropicRequest> {
  model: string;
  body: B;
  options: MessagesOptions;
}

export function messagesCall<B extends { model: string }>(body: B, options: MessagesOptions): MessagesCall<B> {
  return { model: body.model, body, options };
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

const common = {
  name: 'messages',
  adapterOf: (adapters: { messages: Partial<Record<string, MessagesAdapter>> }, channel: { type: string }) => adapters.messages[channel.type],
  hold: (req: MessagesCall) => ({ promptTokens: estimateMessagesPromptTokens(req.body), maxCompletionTokens: req.body.max_tokens }),
};

export const messagesEndpoint: UnaryEndpoint<MessagesCall, MessagesAdapter, MessagesResult, AnthropicResponse> = {
  ...common,
  reason: 'messages',
  call: (adapter, req, call) => adapter.messages(req.body, call, req.options),
  metered: (r, estimate) => (r.usage ? { usage: r.usage } : localUsage(estimate.prompt, estimateTokens(JSON.stringify(r.body.content ?? [])))),
  body: (r) => r.body,
};

export const messagesStreamEndpoint: StreamEndpoint<MessagesCall, MessagesAdapter, MessagesStreamEvent, NamedEventSink> = {
  ...common,
  reason: 'messages_stream',
  open: (adapter, req, call) => adapter.messagesStream(req.body, call, req.options),
  wire({ estimate, sink, stream }) {
    const upstream = stream as MessagesStream;
    let completionLocal = 0;
    let stop = JSON.stringify({ type: 'message_stop' });
    return {
      forward(ev) {
        completionLocal += eventTokens(ev.event);
        // message_stop waits for the settle: a client that saw it may rely on the call being complete.
        if (ev.event.type === 'message_stop') {
          stop = ev.raw ?? JSON.stringify(ev.event);
          return true;
        }
        return sink.send(ev.event.type, ev.raw ?? JSON.stringify(ev.event));
      },
      metered: () => {
        const usage = upstream.usage();
        return usage ? { usage } : localUsage(estimate.prompt, completionLocal);
      },
      complete: () => sink.send('message_stop', stop),
      error: (_code, message) => sink.send('error', messagesErrorEvent('api_error', message)),
    };
  },
};

/**
 * POST /v1/messages/count_tokens: the first channel in the router's order answers natively when it can
 * (`anthropic`), else the prompt is counted locally (the same count a hold uses). Never held or billed.
 */
export const messagesCountEndpoint: CountEndpoint<MessagesCall<AnthropicCountRequest>, MessagesAdapter, TokenCount> = {
  name: 'count_tokens',
  adapterOf: common.adapterOf,
  native: (adapter, req, call) => adapter.countTokens?.(req.body, call, req.options),
  // A count needs no output budget: any max_tokens lets the request be read as a Messages request.
  local: (req) => ({ input_tokens: estimateMessagesPromptTokens({ ...req.body, max_tokens: 1 }) }),
};
