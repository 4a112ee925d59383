/**
 * The tokens of one call by the dimension its provider bills them in, whatever wire format reported them
 * (src/domain/pricing/usage-readers.ts reads them). Every field is a whole number >= 0.
 * - `input`: uncached prompt tokens; `imageInput` and `audioInput` are parts of it.
 * - `cacheRead`, `cacheWrite5m`, `cacheWrite1h`: prompt tokens read from or written to the provider's prompt cache,
 *   not counted in `input`.
 * - `output`: every generated token; `reasoning` and `audioOutput` are parts of it.
 */
export interface TokenUsage {
  input: number;
  cacheRead: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  output: number;
  reasoning: number;
  imageInput: number;
  audioInput: number;
  audioOutput: number;
}

export const NO_TOKENS: Readonly<TokenUsage> = Object.freeze({
  input: 0,
  cacheRead: 0,
  cacheWrite5m: 0,
  cacheWrite1h: 0,
  output: 0,
  reasoning: 0,
  imageInput: 0,
  audioInput: 0,
  audioOutput: 0,
});

/** Usage from the two classic counts (prompt, completion): everything uncached, nothing split out. */
export function plainUsage(promptTokens: number, completionTokens: number): TokenUsage {
  return { ...NO_TOKENS, input: promptTokens, output: completionTokens };
}

/** Every prompt token: uncached, cache reads and cache writes (one-api's and new-api's `prompt_tokens`). */
export function promptTokensOf(u: TokenUsage): number {
  return u.input + u.cacheRead + u.cacheWrite5m + u.cacheWrite1h;
}

/** The ledger's token columns of a call (src/db/migrations/016). */
export interface LedgerTokens {
  prompt_tokens: number;
  completion_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  reasoning_tokens: number;
  image_input_tokens: number;
  audio_input_tokens: number;
  audio_output_tokens: number;
}

export function ledgerTokensOf(u: TokenUsage): LedgerTokens {
  return {
    prompt_tokens: promptTokensOf(u),
    completion_tokens: u.output,
    cache_read_tokens: u.cacheRead,
    cache_write_tokens: u.cacheWrite5m + u.cacheWrite1h,
    cache_write_1h_tokens: u.cacheWrite1h,
    reasoning_tokens: u.reasoning,
    image_input_tokens: u.imageInput,
    audio_input_tokens: u.audioInput,
    audio_output_tokens: u.audioOutput,
  };
}

/** The dimensions a cost is computed over, each a share of the call that one price applies to. */
export const DIMENSIONS = ['input', 'cacheRead', 'cacheWrite5m', 'cacheWrite1h', 'output', 'reasoning', 'imageInput', 'audioInput', 'audioOutput'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** The usage's disjoint shares: the parts (`reasoning`, images, audio) taken out of the totals they belong to. */
export function billableShares(u: TokenUsage): Record<Dimension, number> {
  const imageInput = Math.min(u.imageInput, u.input);
  const audioInput = Math.min(u.audioInput, u.input - imageInput);
  const reasoning = Math.min(u.reasoning, u.output);
  const audioOutput = Math.min(u.audioOutput, u.output - reasoning);
  return {
    input: u.input - imageInput - audioInput,
    cacheRead: u.cacheRead,
    cacheWrite5m: u.cacheWrite5m,
    cacheWrite1h: u.cacheWrite1h,
    output: u.output - reasoning - audioOutput,
    reasoning,
    imageInput,
    audioInput,
    audioOutput,
  };
}
