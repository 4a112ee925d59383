import type { TokenUsage } from '../pricing/usage';
import { toGeminiUsage } from '../pricing/usage-readers';
import type { GeminiPart, GeminiResponse } from './gemini-types';
import type { ChatChunk, ChatCompletion, ChatFinishReason } from './types';

/**
 * Chat-completion answers in the Gemini API's shapes, for a Gemini client on a chat channel: the message's text as
 * a text part (its `reasoning_content` as a thought part when the client asked for thoughts), each tool call as a
 * `functionCall` part (its id kept, so the `functionResponse` that answers it pairs by id), the finish reason and
 * usageMetadata. In a stream, text goes out as it comes; tool calls, whose arguments come in pieces, go out whole
 * on the last chunk with the finish reason and the usage.
 */

const FINISH: Record<ChatFinishReason, string> = {
  stop: 'STOP',
  tool_calls: 'STOP',
  function_call: 'STOP',
  length: 'MAX_TOKENS',
  content_filter: 'SAFETY',
};

function finishOf(reason: string | null | undefined): string {
  return (reason && FINISH[reason as ChatFinishReason]) || 'STOP';
}

function callPart(id: string | undefined, name: string, args: string): GeminiPart {
  let parsed: unknown = {};
  try {
    parsed = args ? JSON.parse(args) : {};
  } catch {
    parsed = { arguments: args };
  }
  const fc: Record<string, unknown> = { name, args: parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : { value: parsed } };
  if (id) fc.id = id;
  return { functionCall: fc as GeminiPart['functionCall'] };
}

function response(parts: GeminiPart[], model: string, id: string, extra: { finishReason?: string; usage?: TokenUsage | null } = {}): GeminiResponse {
  const candidate: Record<string, unknown> = { content: { role: 'model', parts }, index: 0 };
  if (extra.finishReason) candidate.finishReason = extra.finishReason;
  const out: GeminiResponse = { candidates: [candidate], modelVersion: model, responseId: id };
  if (extra.usage) out.usageMetadata = toGeminiUsage(extra.usage);
  return out;
}

export function chatToGeminiResponse(c: ChatCompletion, model: string, usage: TokenUsage | null, thoughts: boolean): GeminiResponse {
  const choice = c.choices[0];
  const parts: GeminiPart[] = [];
  const m = choice?.message;
  if (thoughts && typeof m?.reasoning_content === 'string' && m.reasoning_content) parts.push({ text: m.reasoning_content, thought: true });
  if (typeof m?.content === 'string' && m.content) parts.push({ text: m.content });
  for (const call of m?.tool_calls ?? []) parts.push(callPart(call.id, call.function?.name ?? '', call.function?.arguments ?? ''));
  return response(parts, model, String(c.id ?? ''), { finishReason: finishOf(choice?.finish_reason), usage });
}

export class ChatToGeminiStream {
  private readonly calls = new Map<number, { id?: string; name: string; args: string }>();
  private finish: string | null = null;
  private id = '';

  constructor(
    private readonly model: string,
    private readonly thoughts: boolean,
  ) {}

  /** The Gemini chunks of one chat chunk (none while only tool-call pieces or usage arrive). */
  push(chunk: ChatChunk): GeminiResponse[] {
    if (!this.id && chunk.id) this.id = String(chunk.id);
    const parts: GeminiPart[] = [];
    for (const choice of chunk.choices ?? []) {
      if (choice.index !== 0 && choice.index !== undefined) continue;
      const d = choice.delta ?? {};
      if (this.thoughts && typeof d.reasoning_content === 'string' && d.reasoning_content) parts.push({ text: d.reasoning_content, thought: true });
      if (typeof d.content === 'string' && d.content) parts.push({ text: d.content });
      for (const t of d.tool_calls ?? []) {
        const call = this.calls.get(t.index) ?? { name: '', args: '' };
        if (t.id) call.id = t.id;
        if (t.function?.name) call.name += t.function.name;
        if (t.function?.arguments) call.args += t.function.arguments;
        this.calls.set(t.index, call);
      }
      if (choice.finish_reason) this.finish = finishOf(choice.finish_reason);
    }
    return parts.length ? [response(parts, this.model, this.id)] : [];
  }

  /** The last chunk: the tool calls, whole, the finish reason and the call's usage. */
  end(usage: TokenUsage | null): GeminiResponse {
    const parts = [...this.calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => callPart(c.id, c.name, c.args));
    // Gemini's own last chunk carries a part too (an empty text when nothing is left to say).
    return response(parts.length ? parts : [{ text: '' }], this.model, this.id, { finishReason: this.finish ?? 'STOP', usage });
  }
}
