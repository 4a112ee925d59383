import type { ChatChunk, ChatCompletion, ChatRequest, ChatResult, ChatStreamEvent, UpstreamAdapter } from '../../ports/upstream';
import { usageFromOpenAi } from '../../pricing/usage-readers';
import type { TokenUsage } from '../../pricing/usage';
import { ValidationError } from '../../errors';
import type { StreamSink } from '../caller';
import { localUsage, type StreamEndpoint, type UnaryEndpoint } from '../engine';
import { completionCap, estimateCompletionTokens, estimatePromptTokens, estimateTokens } from '../metering';
import type { ModelRoute } from '../resolve';

/** POST /v1/chat/completions: `openai` channels natively, `anthropic` ones through their chat adapter (translated). */

/** Parameters reasoning-series models refuse. */
const REASONING_REFUSED = ['temperature', 'top_p', 'frequency_penalty'] as const;

function checkReasoning(req: ChatRequest, route: ModelRoute): void {
  if (!route.price.reasoning) return;
  for (const p of REASONING_REFUSED) {
    if (req[p] !== undefined && req[p] !== null) {
      throw new ValidationError(`${p}: is not supported by the reasoning model '${route.model}'`, p);
    }
  }
  req.messages.forEach((m, i) => {
    if (m.role === 'system') {
      throw new ValidationError(`messages[${i}].role: the 'system' role is not supported by the reasoning model '${route.model}'`, `messages[${i}].role`);
    }
  });
}

const common = {
  name: 'chat completions',
  adapterOf: (adapters: { chat: Partial<Record<string, UpstreamAdapter>> }, channel: { type: string }) => adapters.chat[channel.type],
  check: checkReasoning,
  hold: (req: ChatRequest, _route: ModelRoute, ctx: { defaultCompletionCap: number }) => ({
    promptTokens: estimatePromptTokens(req),
    maxCompletionTokens: completionCap(req, ctx.defaultCompletionCap),
  }),
};

export const chatEndpoint: UnaryEndpoint<ChatRequest, UpstreamAdapter, ChatResult, ChatCompletion> = {
  ...common,
  reason: 'chat',
  call: (adapter, req, call) => adapter.chat(req, call),
  metered: (r, estimate) => (r.usage ? { usage: r.usage } : localUsage(estimate.prompt, estimateCompletionTokens(r.body.choices))),
  body: (r) => r.body,
};

export const chatStreamEndpoint: StreamEndpoint<ChatRequest, UpstreamAdapter, ChatStreamEvent, StreamSink> = {
  ...common,
  reason: 'chat_stream',
  open: (adapter, req, call) => adapter.chatStream(req, call),
  wire({ req, estimate, sink }) {
    const wantUsage = req.stream_options?.include_usage === true;
    let usage: TokenUsage | null = null;
    let completionLocal = 0;
    return {
      forward(ev) {
        const chunk = ev.chunk;
        let payload: string | null;
        if ('usage' in chunk) {
          const u = ev.usage ?? (chunk.usage != null ? usageFromOpenAi(chunk.usage) : null);
          if (u) usage = u;
          // The client sees usage only when it asked for it; the gateway always reads it.
          if (wantUsage) payload = ev.raw ?? JSON.stringify(chunk);
          else if (chunk.choices.length === 0) payload = null;
          else payload = JSON.stringify(withoutUsage(chunk));
        } else {
          payload = ev.raw ?? JSON.stringify(chunk);
        }
        if (usage === null) completionLocal += deltaTokens(chunk);
        return payload === null ? true : sink.send(payload);
      },
      metered: () => (usage ? { usage } : localUsage(estimate.prompt, completionLocal)),
      complete: () => sink.send('[DONE]'),
      error: (code, message) => sink.send(JSON.stringify(streamError(message, code))),
    };
  },
};

function withoutUsage(chunk: ChatChunk): Record<string, unknown> {
  const { usage: _usage, ...rest } = chunk;
  return rest;
}

/** Local count of a chunk's content and tool-call arguments (used only when the upstream reports no usage). */
function deltaTokens(chunk: ChatChunk): number {
  let n = 0;
  for (const choice of chunk.choices) {
    const delta = choice.delta as { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> } | undefined;
    if (!delta) continue;
    if (typeof delta.content === 'string') n += estimateTokens(delta.content);
    if (Array.isArray(delta.tool_calls)) {
      for (const t of delta.tool_calls) if (typeof t?.function?.arguments === 'string') n += estimateTokens(t.function.arguments);
    }
  }
  return n;
}

/** An error event in a chat stream that already started (the OpenAI SDK raises it as an APIError). */
export function streamError(message: string, code: string) {
  return { error: { message, type: 'server_error', param: null, code } };
}
