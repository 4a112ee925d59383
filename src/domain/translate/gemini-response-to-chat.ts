import type { TokenUsage } from '../pricing/usage';
import { toChatUsage, usageFromGemini } from '../pricing/usage-readers';
import { geminiField, type GeminiPart, type GeminiResponse } from './gemini-types';
import { toolCallId } from './thought-signature-ids';
import type { ChatChunk, ChatChunkToolCall, ChatCompletion, ChatFinishReason, ChatToolCall } from './types';

/**
 * Gemini answers as chat completions, for a chat (and, over it, Messages or Responses) client on a `gemini` channel:
 * text parts -> content, thought parts -> `reasoning_content`, `functionCall` parts -> tool calls whose id carries
 * the part's `thoughtSignature` (./thought-signature-ids.ts), `finishReason` -> finish_reason, usageMetadata ->
 * usage. A stream's chunks each carry the running usage: the last one seen is the call's.
 */

const FINISH: Record<string, ChatFinishReason> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
};

function finishOf(reason: unknown, calledTools: boolean): ChatFinishReason {
  if (calledTools) return 'tool_calls';
  return (typeof reason === 'string' && FINISH[reason]) || 'stop';
}

function partsOf(r: GeminiResponse): GeminiPart[] {
  const parts = r.candidates?.[0]?.content?.parts;
  return Array.isArray(parts) ? parts : [];
}

function callOf(p: GeminiPart): ChatToolCall | null {
  const fc = geminiField<GeminiPart['functionCall']>(p, 'functionCall');
  if (!fc || typeof fc.name !== 'string') return null;
  const signature = geminiField<string>(p, 'thoughtSignature');
  const id = typeof fc.id === 'string' && fc.id && !signature ? fc.id : toolCallId(signature);
  return { id, type: 'function', function: { name: fc.name, arguments: JSON.stringify(fc.args ?? {}) } };
}

export function geminiToChatCompletion(r: GeminiResponse, model: string, created = Math.floor(Date.now() / 1000)): ChatCompletion {
  let text = '';
  let thinking = '';
  const calls: ChatToolCall[] = [];
  for (const p of partsOf(r)) {
    if (typeof p.text === 'string') {
      if (p.thought === true) thinking += p.text;
      else text += p.text;
    }
    const call = callOf(p);
    if (call) calls.push(call);
  }
  const message: ChatCompletion['choices'][number]['message'] = { role: 'assistant', content: text || (calls.length ? null : '') };
  if (calls.length) message.tool_calls = calls;
  if (thinking) message.reasoning_content = thinking;
  const usage = usageFromGemini(r.usageMetadata);
  const out: ChatCompletion = {
    id: `chatcmpl-${r.responseId ?? Date.now().toString(36)}`,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message, finish_reason: finishOf(r.candidates?.[0]?.finishReason, calls.length > 0) }],
  };
  if (usage) out.usage = toChatUsage(usage);
  return out;
}

export class GeminiToChatStream {
  private readonly created = Math.floor(Date.now() / 1000);
  private id = '';
  private started = false;
  private calls = 0;
  private finish: unknown = undefined;
  private last: TokenUsage | null = null;

  constructor(private readonly model: string) {}

  private chunk(delta: ChatChunk['choices'][number]['delta'], finish: ChatFinishReason | null = null): ChatChunk {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, finish_reason: finish }] };
  }

  push(r: GeminiResponse): ChatChunk[] {
    if (!this.id) this.id = `chatcmpl-${r.responseId ?? Date.now().toString(36)}`;
    const usage = usageFromGemini(r.usageMetadata);
    if (usage) this.last = usage;
    const out: ChatChunk[] = [];
    if (!this.started) {
      this.started = true;
      out.push(this.chunk({ role: 'assistant', content: '' }));
    }
    for (const p of partsOf(r)) {
      if (typeof p.text === 'string' && p.text) out.push(this.chunk(p.thought === true ? { reasoning_content: p.text } : { content: p.text }));
      const call = callOf(p);
      if (call) {
        const tc: ChatChunkToolCall = { index: this.calls++, id: call.id, type: 'function', function: call.function };
        out.push(this.chunk({ tool_calls: [tc] }));
      }
    }
    const reason = r.candidates?.[0]?.finishReason;
    if (reason !== undefined && reason !== null) this.finish = reason;
    return out;
  }

  /** The finish chunk and the usage chunk, once the upstream stream ended. */
  end(): ChatChunk[] {
    const out = [this.chunk({}, finishOf(this.finish, this.calls > 0))];
    if (this.last) out.push({ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage: toChatUsage(this.last) });
    return out;
  }

  usage(): TokenUsage | null {
    return this.last;
  }
}
