import type { TokenCounts, UpstreamCall } from './adapter';
import type { AnthropicRequest, AnthropicResponse, AnthropicStreamEvent } from './translate/types';

/**
 * The seam of POST /v1/messages: one upstream call answering a Messages request in Messages shapes. Same
 * contract as UpstreamAdapter (src/upstream/adapter.ts): every failure is an UpstreamError, `call.signal` aborts,
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
}

export interface MessagesResult {
  body: AnthropicResponse;
  /** The upstream's own counts (input_tokens -> prompt, output_tokens -> completion); null when it gave none. */
  usage: TokenCounts | null;
}

export interface MessagesStreamEvent {
  event: AnthropicStreamEvent;
  /** The event's JSON exactly as received, when unchanged (forwarded without re-serializing). */
  raw?: string;
}

/** A started stream (the upstream answered 2xx). Iterating yields events up to and including message_stop. */
export interface MessagesStream extends AsyncIterable<MessagesStreamEvent> {
  /** The counts seen so far; final once iteration ended. Null when the upstream gave none. */
  usage(): TokenCounts | null;
  /** Stops reading and drops the upstream connection. Idempotent. */
  cancel(): void;
}

export interface MessagesAdapter {
  messages(req: AnthropicRequest, call: UpstreamCall, opts: MessagesOptions): Promise<MessagesResult>;
  messagesStream(req: AnthropicRequest, call: UpstreamCall, opts: MessagesOptions): Promise<MessagesStream>;
}

/** Tracks usage across a Messages event stream: message_start has input (and 1 output), message_delta the totals. */
export class MessagesUsage {
  private input: number | null = null;
  private output: number | null = null;
  stopped = false;

  see(event: AnthropicStreamEvent): void {
    if (event.type === 'message_start') {
      const u = event.message?.usage;
      if (isCount(u?.input_tokens)) this.input = u.input_tokens;
      if (isCount(u?.output_tokens)) this.output = u.output_tokens;
    } else if (event.type === 'message_delta') {
      const u = event.usage;
      if (isCount(u?.input_tokens)) this.input = u.input_tokens as number;
      if (isCount(u?.output_tokens)) this.output = u.output_tokens as number;
    } else if (event.type === 'message_stop') {
      this.stopped = true;
    }
  }

  counts(): TokenCounts | null {
    return this.input === null ? null : { promptTokens: this.input, completionTokens: this.output ?? 0 };
  }
}

function isCount(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}
