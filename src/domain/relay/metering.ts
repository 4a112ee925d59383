import type { ChatMessage, ChatRequest } from '../ports/upstream';

/**
 * Metering of relayed calls: a local, conservative token count (no tokenizer library is installed; see
 * `estimateTokens`) for the hold before the upstream call, and for billing when an upstream reports no usage.
 */

/** Tokens held for each image part of a prompt (OpenAI's high-detail worst case is about 1,105). */
export const IMAGE_TOKEN_ESTIMATE = 1_105;
/** Framing per message and per prompt (OpenAI counts 3 and 3; 4 leaves room for names). */
const MESSAGE_OVERHEAD = 4;
const PROMPT_OVERHEAD = 3;
/** Completion tokens held when the request sets no max_tokens. */
export const DEFAULT_COMPLETION_CAP = 4_096;

/**
 * An upper-bound token count of `text`: runs of ASCII letters/digits count one token per 3 characters (real
 * tokenizers average about 4), every other non-space character one token (punctuation, CJK, emoji). Used for
 * holds (the hold must cover the charge) and, only when an upstream reports no usage, for billing.
 */
export function estimateTokens(text: string): number {
  let tokens = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const word = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
    if (word) {
      run++;
      continue;
    }
    if (run) {
      tokens += Math.ceil(run / 3);
      run = 0;
    }
    if (c === 32 || c === 10 || c === 9 || c === 13) continue;
    // A surrogate pair is one character: count its high half only.
    if (c >= 0xdc00 && c <= 0xdfff) continue;
    tokens++;
  }
  if (run) tokens += Math.ceil(run / 3);
  return tokens;
}

function contentTokens(content: unknown): number {
  if (typeof content === 'string') return estimateTokens(content);
  if (!Array.isArray(content)) return content == null ? 0 : estimateTokens(JSON.stringify(content));
  let n = 0;
  for (const part of content) {
    if (!part || typeof part !== 'object') continue;
    const p = part as { type?: unknown; text?: unknown };
    if (p.type === 'text' && typeof p.text === 'string') n += estimateTokens(p.text);
    else if (p.type === 'image_url' || p.type === 'input_image') n += IMAGE_TOKEN_ESTIMATE;
    else n += estimateTokens(JSON.stringify(part));
  }
  return n;
}

/** Prompt tokens of a chat request, counted locally (messages, names, tool calls, tool definitions). */
export function estimatePromptTokens(req: Pick<ChatRequest, 'messages'> & { tools?: unknown; functions?: unknown }): number {
  let n = PROMPT_OVERHEAD;
  for (const m of req.messages as ChatMessage[]) {
    n += MESSAGE_OVERHEAD + contentTokens(m.content);
    if (typeof m.name === 'string') n += estimateTokens(m.name);
    if (m.tool_calls !== undefined) n += estimateTokens(JSON.stringify(m.tool_calls));
    if (m.function_call !== undefined) n += estimateTokens(JSON.stringify(m.function_call));
  }
  if (req.tools !== undefined) n += estimateTokens(JSON.stringify(req.tools));
  if (req.functions !== undefined) n += estimateTokens(JSON.stringify(req.functions));
  return n;
}

/** Completion tokens to hold: (max_completion_tokens ?? max_tokens ?? cap) × n. */
export function completionCap(req: ChatRequest, defaultCap = DEFAULT_COMPLETION_CAP): number {
  const max = req.max_completion_tokens ?? req.max_tokens ?? defaultCap;
  return max * (req.n ?? 1);
}

/** Tokens of embedding inputs: strings counted locally, token arrays by their length. */
export function estimateEmbeddingTokens(input: unknown): number {
  if (typeof input === 'string') return estimateTokens(input);
  if (!Array.isArray(input)) return 0;
  let n = 0;
  for (const item of input) {
    if (typeof item === 'string') n += estimateTokens(item);
    else if (typeof item === 'number') n += 1;
    else if (Array.isArray(item)) n += item.length;
  }
  return n;
}

/** Completion tokens of a finished (non-streamed) answer, counted locally. */
export function estimateCompletionTokens(choices: unknown[]): number {
  let n = 0;
  for (const c of choices) {
    const msg = (c as { message?: { content?: unknown; tool_calls?: unknown } })?.message;
    if (!msg) continue;
    n += contentTokens(msg.content);
    if (msg.tool_calls !== undefined) n += estimateTokens(JSON.stringify(msg.tool_calls));
  }
  return n;
}
