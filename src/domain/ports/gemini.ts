import type { TokenUsage } from '../pricing/usage';
import type { GeminiRequest, GeminiResponse } from '../translate/gemini-types';
import type { UpstreamCall } from './upstream';

/**
 * The seam of the Gemini API routes (`/v1beta/models/{model}:generateContent` and its kin): one upstream call
 * answering a Gemini request in Gemini shapes. Same contract as UpstreamAdapter (./upstream.ts). Implemented natively
 * by the `gemini` channel type (src/upstream/gemini-adapter.ts) and by translation over any chat adapter
 * (src/upstream/gemini-over-chat.ts).
 */

export interface GeminiResult {
  body: GeminiResponse;
  /** The upstream's own usage; null when it gave none. */
  usage: TokenUsage | null;
}

export interface GeminiStreamEvent {
  response: GeminiResponse;
  /** The chunk's JSON exactly as received, when unchanged (forwarded without re-serializing). */
  raw?: string;
}

/** A started stream; iterating yields the chunks, the last with the finish reason. */
export interface GeminiStream extends AsyncIterable<GeminiStreamEvent> {
  /** The usage of the last chunk that carried one (chunks carry running totals); null when none did. */
  usage(): TokenUsage | null;
  cancel(): void;
}

/** `batchEmbedContents`: `{requests: [{model, content, taskType?, title?, outputDimensionality?}]}`. */
export interface GeminiEmbedRequest {
  requests: Array<{ content: { parts: Array<{ text?: string; [k: string]: unknown }>; [k: string]: unknown }; [k: string]: unknown }>;
  [k: string]: unknown;
}

export interface GeminiEmbedResult {
  /** `{embeddings: [{values}]}`. */
  body: { embeddings: unknown[]; [k: string]: unknown };
  /** Tokens the upstream counted; null when it gave none (Gemini gives none: counted locally). */
  promptTokens: number | null;
}

/** countTokens: `{totalTokens}` and whatever else the upstream adds. */
export type GeminiTokenCount = { totalTokens: number } & Record<string, unknown>;

export interface GeminiOptions {
  /** The model thinks (its config says `thinking`, or `reasoning`): a translation passes `thinkingConfig` on instead of dropping it. */
  thinking?: boolean;
}

export interface GeminiAdapter {
  generate(req: GeminiRequest, call: UpstreamCall, opts?: GeminiOptions): Promise<GeminiResult>;
  generateStream(req: GeminiRequest, call: UpstreamCall, opts?: GeminiOptions): Promise<GeminiStream>;
  embed(req: GeminiEmbedRequest, call: UpstreamCall): Promise<GeminiEmbedResult>;
  /** The upstream's own count; absent: counted locally. */
  countTokens?(req: Record<string, unknown>, call: UpstreamCall): Promise<GeminiTokenCount>;
}
