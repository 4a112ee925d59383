import type { LedgerTokens } from '../pricing/usage';

/** How a row's prompt_tokens and completion_tokens split by usage dimension (src/domain/pricing/usage.ts). */
export const TOKEN_DETAIL_COLUMNS = [
  'cache_read_tokens',
  'cache_write_tokens',
  'cache_write_1h_tokens',
  'reasoning_tokens',
  'image_input_tokens',
  'audio_input_tokens',
  'audio_output_tokens',
] as const satisfies ReadonlyArray<keyof LedgerTokens>;

export type TokenDetails = Record<(typeof TOKEN_DETAIL_COLUMNS)[number], number>;

/** Filters of `GET /api/log/` (all optional; timestamps are Unix seconds, both ends inclusive). */
export interface LedgerFilters {
  /** Exact key name. */
  tokenName?: string;
  /** Exact model id. */
  modelName?: string;
  startTimestamp?: number;
  endTimestamp?: number;
}

export type CallLogFilters = LedgerFilters;

/**
 * One billed call as /api/log/ shows it (one-api field names): prompt_tokens counts every input token (cache reads
 * and writes included) and completion_tokens every output token (reasoning included); the token details say how
 * they split.
 */
export interface CallLogEntry extends TokenDetails {
  id: number;
  created_at: number;
  request_id: string;
  token_name: string;
  model_name: string;
  quota: number;
  prompt_tokens: number;
  completion_tokens: number;
  units: number;
  /** What `units` counts: 'characters', 'milliseconds', 'search_units', 'images', 'videos'; '' for tokens. */
  unit: string;
  /** Seconds, as one-api reports it; `latency_ms` is exact. */
  use_time: number;
  latency_ms: number;
  is_stream: boolean;
  channel: string;
}

export interface CallLogTotals extends TokenDetails {
  quota: number;
  count: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/** Credits, calls and tokens of one UTC day and model. */
export type DailyUsage = { day: string; model: string; quota: number; count: number; prompt_tokens: number; completion_tokens: number } & TokenDetails;

/** Video tasks finished on a channel in the last 24 hours (cancelled ones aside): how many, how many completed, how long. */
export interface VideoChannelDay {
  channel: string;
  done: number;
  ok: number;
  p50: number | null;
  p95: number | null;
  /** Epoch ms of the last one. */
  last: number | null;
}

/** What the management API and the console report of an account's usage (read from the ledger and the tasks). */
export interface UsageReports {
  /** GET /api/log/: an account's billed calls, newest first, filtered and paged. */
  calls(accountId: number, filters: CallLogFilters, page: { offset: number; limit: number }): Promise<{ items: CallLogEntry[]; total: number }>;
  /** GET /api/log/stat: their sum. */
  callTotals(accountId: number, filters: CallLogFilters): Promise<CallLogTotals>;
  /** Per UTC day and model, oldest day first (the console's usage chart). */
  byDay(accountId: number, filters: CallLogFilters): Promise<DailyUsage[]>;
  /** Every account's video tasks per channel over the last 24 hours (counts only). */
  videoChannelsDay(): Promise<VideoChannelDay[]>;
}
