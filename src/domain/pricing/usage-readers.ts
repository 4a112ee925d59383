import { NO_TOKENS, promptTokensOf, type TokenUsage } from './usage';
import type { AnthropicStreamEvent, AnthropicUsage, ChatUsage } from '../translate/types';
import type { GeminiUsageMetadata } from '../translate/gemini-types';

/**
 * Usage as providers report it, read into one TokenUsage (src/domain/pricing/usage.ts), and written back in
 * either wire format for translated answers. The rules (docs/gateway-config.md, "Usage dimensions"):
 *
 * OpenAI-compatible `usage`:
 * - `prompt_tokens` includes `prompt_tokens_details.cached_tokens` (DeepSeek's `prompt_cache_hit_tokens` when
 *   that is absent) and cache writes where a provider reports them (`prompt_tokens_details.cache_write_tokens`, or
 *   `cache_creation_input_tokens`); `audio_tokens` and `image_tokens` of the details are parts of the uncached rest.
 * - `completion_tokens` includes `completion_tokens_details.reasoning_tokens` and `audio_tokens`. Some providers
 *   (xAI) count reasoning outside it: when `total_tokens` exceeds prompt + completion, output is
 *   `total_tokens - prompt_tokens`, so every token the provider counted is billed.
 * Anthropic `usage`:
 * - `input_tokens` excludes the cache; `cache_read_input_tokens` are reads; `cache_creation_input_tokens` are
 *   writes, 1-hour ones as `cache_creation.ephemeral_1h_input_tokens` says (at most the total), the rest 5-minute.
 * - `output_tokens` includes thinking (`output_tokens_details.thinking_tokens` where reported).
 * - In a stream, usage comes in message_start and may be updated by message_delta: the later figure wins per field.
 * Gemini `usageMetadata`:
 * - `promptTokenCount` includes `cachedContentTokenCount`; `toolUsePromptTokenCount` (what a tool gave the model)
 *   is input beside it; `candidatesTokenCount` excludes `thoughtsTokenCount`, which is output too (reasoning).
 * - Every chunk of a stream carries the running totals: the last one is the call's, never the sum.
 */

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}

function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** An OpenAI-shaped `usage` object; null unless prompt_tokens is a whole number >= 0. */
export function usageFromOpenAi(usage: unknown): TokenUsage | null {
  const u = obj(usage);
  const prompt = count(u.prompt_tokens);
  if (prompt === null) return null;
  const completion = count(u.completion_tokens) ?? 0;
  const total = count(u.total_tokens);
  const pd = obj(u.prompt_tokens_details);
  const cd = obj(u.completion_tokens_details);
  const cacheRead = Math.min(count(pd.cached_tokens) ?? count(u.prompt_cache_hit_tokens) ?? 0, prompt);
  const cacheWrite = Math.min(count(pd.cache_write_tokens) ?? count(u.cache_creation_input_tokens) ?? 0, prompt - cacheRead);
  const input = prompt - cacheRead - cacheWrite;
  const output = total !== null && total > prompt + completion ? total - prompt : completion;
  return {
    input,
    cacheRead,
    cacheWrite5m: cacheWrite,
    cacheWrite1h: 0,
    output,
    reasoning: Math.min(count(cd.reasoning_tokens) ?? 0, output),
    imageInput: Math.min(count(pd.image_tokens) ?? 0, input),
    audioInput: Math.min(count(pd.audio_tokens) ?? 0, input),
    audioOutput: Math.min(count(cd.audio_tokens) ?? 0, output),
  };
}

/**
 * A Responses API `usage` object (`input_tokens` includes `input_tokens_details.cached_tokens`, `output_tokens`
 * includes `output_tokens_details.reasoning_tokens`); null unless input_tokens is a whole number >= 0.
 */
export function usageFromResponses(usage: unknown): TokenUsage | null {
  const u = obj(usage);
  const input = count(u.input_tokens);
  if (input === null) return null;
  const output = count(u.output_tokens) ?? 0;
  const cacheRead = Math.min(count(obj(u.input_tokens_details).cached_tokens) ?? 0, input);
  return {
    ...NO_TOKENS,
    input: input - cacheRead,
    cacheRead,
    output,
    reasoning: Math.min(count(obj(u.output_tokens_details).reasoning_tokens) ?? 0, output),
  };
}

/** An Anthropic `usage` object; null unless input_tokens is a whole number >= 0. */
export function usageFromAnthropic(usage: unknown): TokenUsage | null {
  const u = obj(usage);
  const input = count(u.input_tokens);
  if (input === null) return null;
  const writes = count(u.cache_creation_input_tokens) ?? 0;
  const oneHour = Math.min(count(obj(u.cache_creation).ephemeral_1h_input_tokens) ?? 0, writes);
  const output = count(u.output_tokens) ?? 0;
  const od = obj(u.output_tokens_details);
  return {
    ...NO_TOKENS,
    input,
    cacheRead: count(u.cache_read_input_tokens) ?? 0,
    cacheWrite5m: writes - oneHour,
    cacheWrite1h: oneHour,
    output,
    reasoning: Math.min(count(od.thinking_tokens) ?? count(od.reasoning_tokens) ?? 0, output),
  };
}

/** Follows the usage of a Messages event stream: message_start's, updated field by field by message_delta. */
export class AnthropicUsageTracker {
  private merged: Record<string, unknown> | null = null;

  see(event: AnthropicStreamEvent): void {
    if (event.type === 'message_start') this.merge(obj(event.message?.usage));
    else if (event.type === 'message_delta') this.merge(obj(event.usage));
  }

  /** The usage so far; null when no event carried input_tokens. */
  usage(): TokenUsage | null {
    return this.merged === null ? null : usageFromAnthropic(this.merged);
  }

  private merge(u: Record<string, unknown>): void {
    const next = { ...(this.merged ?? {}) };
    for (const [k, v] of Object.entries(u)) if (v !== null && v !== undefined) next[k] = v;
    this.merged = next;
  }
}

/** A usage as an OpenAI chat `usage` object: prompt_tokens counts cached tokens, completion_tokens reasoning. */
export function toChatUsage(u: TokenUsage): ChatUsage {
  const prompt = promptTokensOf(u);
  const writes = u.cacheWrite5m + u.cacheWrite1h;
  const promptDetails: Record<string, number> = { cached_tokens: u.cacheRead };
  if (writes > 0) promptDetails.cache_write_tokens = writes;
  if (u.audioInput > 0) promptDetails.audio_tokens = u.audioInput;
  if (u.imageInput > 0) promptDetails.image_tokens = u.imageInput;
  const completionDetails: Record<string, number> = { reasoning_tokens: u.reasoning };
  if (u.audioOutput > 0) completionDetails.audio_tokens = u.audioOutput;
  return {
    prompt_tokens: prompt,
    completion_tokens: u.output,
    total_tokens: prompt + u.output,
    prompt_tokens_details: promptDetails,
    completion_tokens_details: completionDetails,
  };
}

/** A usage as an Anthropic `usage` object: input_tokens without the cache, reads and writes beside it. */
export function toAnthropicUsage(u: TokenUsage): AnthropicUsage {
  const writes = u.cacheWrite5m + u.cacheWrite1h;
  const out: AnthropicUsage = {
    input_tokens: u.input,
    cache_creation_input_tokens: writes,
    cache_read_input_tokens: u.cacheRead,
    output_tokens: u.output,
  };
  if (writes > 0) out.cache_creation = { ephemeral_5m_input_tokens: u.cacheWrite5m, ephemeral_1h_input_tokens: u.cacheWrite1h };
  return out;
}

/**
 * Audio usage as OpenAI's speech and transcription endpoints report it: `{type: "tokens", input_tokens,
 * input_token_details: {audio_tokens, text_tokens}, output_tokens}` (the type may be absent on speech's
 * `speech.audio.done`, whose output tokens are audio). Null for `{type: "duration"}` or anything else.
 */
export function usageFromAudio(usage: unknown, output: 'text' | 'audio'): TokenUsage | null {
  const u = obj(usage);
  if (u.type !== undefined && u.type !== 'tokens') return null;
  const input = count(u.input_tokens);
  const out = count(u.output_tokens);
  if (input === null && out === null) return null;
  const details = obj(u.input_token_details);
  const audioIn = count(details.audio_tokens) ?? 0;
  const textIn = count(details.text_tokens);
  const inputTokens = input ?? audioIn + (textIn ?? 0);
  return {
    ...NO_TOKENS,
    input: Math.max(inputTokens, audioIn),
    audioInput: audioIn,
    output: out ?? 0,
    audioOutput: output === 'audio' ? (out ?? 0) : 0,
  };
}

/** Seconds of audio an upstream reported: `usage: {type: "duration", seconds}`, or verbose_json's `duration`. */
export function audioSecondsOf(json: Record<string, unknown>): number | null {
  // verbose_json's `duration` is exact; `usage.seconds` may be whole seconds.
  const u = obj(json.usage);
  for (const s of [json.duration, u.type === 'duration' ? u.seconds : undefined]) {
    if (typeof s === 'number' && Number.isFinite(s) && s >= 0) return s;
  }
  return null;
}

/** A Gemini `usageMetadata` object; null unless promptTokenCount is a whole number >= 0. */
export function usageFromGemini(usage: unknown): TokenUsage | null {
  const u = obj(usage);
  const prompt = count(u.promptTokenCount);
  if (prompt === null) return null;
  const cacheRead = Math.min(count(u.cachedContentTokenCount) ?? 0, prompt);
  const thoughts = count(u.thoughtsTokenCount) ?? 0;
  const output = (count(u.candidatesTokenCount) ?? 0) + thoughts;
  let image = 0;
  let audio = 0;
  for (const d of Array.isArray(u.promptTokensDetails) ? u.promptTokensDetails : []) {
    const n = count(obj(d).tokenCount) ?? 0;
    if (obj(d).modality === 'IMAGE') image += n;
    else if (obj(d).modality === 'AUDIO') audio += n;
  }
  const input = prompt - cacheRead + (count(u.toolUsePromptTokenCount) ?? 0);
  return {
    ...NO_TOKENS,
    input,
    cacheRead,
    output,
    reasoning: thoughts,
    imageInput: Math.min(image, input),
    audioInput: Math.min(audio, Math.max(0, input - image)),
  };
}

/** A usage as a Gemini `usageMetadata` object: promptTokenCount counts the cache, thoughts beside the candidates. */
export function toGeminiUsage(u: TokenUsage): GeminiUsageMetadata {
  const prompt = promptTokensOf(u);
  const out: GeminiUsageMetadata = {
    promptTokenCount: prompt,
    candidatesTokenCount: u.output - u.reasoning,
    totalTokenCount: prompt + u.output,
  };
  if (u.cacheRead > 0) out.cachedContentTokenCount = u.cacheRead;
  if (u.reasoning > 0) out.thoughtsTokenCount = u.reasoning;
  return out;
}
