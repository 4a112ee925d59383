/**
 * The simulator's deterministic tokenizer. Not any real model's: a token is a run of up to 4 ASCII
 * word characters ([A-Za-z0-9_]) or one other non-space code point (punctuation, each CJK character,
 * each emoji). So "hello, world" is `hell|o|,|worl|d` = 5 tokens: roughly 4 characters per token for
 * English text, like the real tokenizers. Whitespace is free.
 */
const TOKEN = /\w{1,4}|[^\w\s]/gu;

/** Fixed cost of one image in a prompt (OpenAI's low-detail base cost). */
export const IMAGE_TOKENS = 85;
/** Chat framing: per message, and once per prompt (the reply priming), as OpenAI counts it. */
export const MESSAGE_OVERHEAD_TOKENS = 3;
export const PROMPT_OVERHEAD_TOKENS = 3;

export function countTokens(text: string): number {
  if (!text) return 0;
  TOKEN.lastIndex = 0;
  let n = 0;
  while (TOKEN.exec(text) !== null) n++;
  return n;
}

/** End offsets of each token in `text` (so `text.slice(0, ends[k - 1])` is the first k tokens). */
export function tokenEnds(text: string): number[] {
  const ends: number[] = [];
  TOKEN.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = TOKEN.exec(text)) !== null) ends.push(m.index + m[0].length);
  return ends;
}

/** The first `max` tokens of `text`, and whether it was cut. */
export function truncateTokens(text: string, max: number): { text: string; cut: boolean } {
  const ends = tokenEnds(text);
  if (ends.length <= max) return { text, cut: false };
  return { text: text.slice(0, max > 0 ? ends[max - 1] : 0), cut: true };
}

/**
 * `text` in at most `parts` pieces of about equal token counts, concatenating back to `text`
 * (whitespace stays with the following token). Never returns an empty piece; '' gives [].
 */
export function splitTokens(text: string, parts: number): string[] {
  if (!text) return [];
  const ends = tokenEnds(text);
  const n = Math.max(1, Math.min(parts, ends.length));
  if (n === 1) return [text];
  const out: string[] = [];
  let from = 0;
  for (let i = 1; i <= n; i++) {
    const to = i === n ? text.length : ends[Math.round((ends.length * i) / n) - 1];
    if (to > from) out.push(text.slice(from, to));
    from = to;
  }
  return out;
}

/** Token cost of a JSON value (tool definitions, tool arguments): its compact JSON text. */
export function countJsonTokens(value: unknown): number {
  return value === undefined ? 0 : countTokens(JSON.stringify(value));
}
