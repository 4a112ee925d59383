import type { TokenUsage } from '../pricing/usage';
import type { UpstreamCall } from './upstream';
import type { AnthropicRequest, AnthropicResponse, AnthropicStreamEvent } from '../translate/types';

/**
 * The seam of POST /v1/messages: one upstream call answering a Messages request in Messages shapes. Same
 * contract as UpstreamAdapter (src/domain/ports/upstream.ts): every failure is an UpstreamError, `call.signal` aborts,
 * no host/key/raw body in messages. Implemented natively by the `anthropic` channel type
 * (src/upstream/anthropic-adapter.ts) and by translation over any chat adapter (src/upstream/messages-over-chat.ts).
 */

/** The Messages API version sent upstream when the client gives none (`X-Vendor-Version` / `anthropic-version`). */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

export interface MessagesOptions {
  /** Forwarded as the upstream's `anthropic-version`. */
  version: string;
  /** Forwarded as `anthropic-beta` when the client sent one. */
  beta?: string;
  /** The client's query string (`beta=true`, as Claude Code sends), forwarded to a native upstream. */
  query?: string;
}

export interface MessagesResult {
  body: AnthropicResponse;
  /** The upstream's own usage by dimension; null when it gave none. */
  usage: TokenUsage | null;
}

export interface MessagesStreamEvent {
  event: AnthropicStreamEvent;
  /** The event's JSON exactly as received, when unchanged (forwarded without re-serializing). */
  raw?: string;
}

/** A started stream (the upstream answered 2xx). Iterating yields events up to and including message_stop. */
export interface MessagesStream extends AsyncIterable<MessagesStreamEvent> {
  /** The usage seen so far; final once iteration ended. Null when the upstream gave none. */
  usage(): TokenUsage | null;
  /** Stops reading and drops the upstream connection. Idempotent. */
  cancel(): void;
}

/** A count_tokens answer: `input_tokens`, and whatever else the upstream adds. */
export type TokenCount = { input_tokens: number } & Record<string, unknown>;

export interface MessagesAdapter {
  messages(req: AnthropicRequest, call: UpstreamCall, opts: MessagesOptions): Promise<MessagesResult>;
  messagesStream(req: AnthropicRequest, call: UpstreamCall, opts: MessagesOptions): Promise<MessagesStream>;
  /** POST /v1/messages/count_tokens natively (`{input_tokens}` and whatever else the upstream answers); absent: counted locally. */
  countTokens?(req: Record<string, unknown>, call: UpstreamCall, opts: MessagesOptions): Promise<TokenCount>;
}
