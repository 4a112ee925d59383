import type { ChannelConfig } from '../../gateway-config/schema';

/** A provider's own batch API (OpenAI's Batch API, Anthropic's Message Batches), as batch inference uses it. */

/** One line's outcome as the provider reported it; `body` is the answer (ok) or the error object. */
export interface ProviderLineResult {
  customId: string;
  ok: boolean;
  status: number;
  body: unknown;
}

export interface ProviderBatchCall {
  channel: ChannelConfig;
  signal: AbortSignal;
}

export interface ProviderBatchAdapter {
  /**
   * A batch created earlier for `tag` (a crash between the create and its record), or null. OpenAI: the tag in its
   * metadata. Anthropic batches carry no metadata: one created since `since` (ms) with exactly `count` requests.
   */
  find(call: ProviderBatchCall, tag: string, hint: { count: number; since: number }): Promise<string | null>;
  /** Creates the batch; `lines` carry the upstream's model ids already. */
  create(call: ProviderBatchCall, endpoint: string, lines: Array<{ customId: string; body: unknown }>, tag: string): Promise<string>;
  /** Whether it has ended (completed, failed, expired or cancelled). */
  ended(call: ProviderBatchCall, id: string): Promise<boolean>;
  cancel(call: ProviderBatchCall, id: string): Promise<void>;
  /** The outcome of each line it answered (lines it never ran are absent). */
  results(call: ProviderBatchCall, id: string): Promise<ProviderLineResult[]>;
}
