// The shapes the console reads, as the /api/* endpoints answer them (src/schemas/responses.ts).

export interface TokenRecord {
  id: number;
  key: string;
  status: number;
  name: string;
  group: string;
  models: string;
  remain_quota: number;
  unlimited_quota: boolean;
  used_quota: number;
  expired_time: number;
  created_time: number;
  accessed_time: number;
  model_limits: string;
  model_limits_enabled: boolean;
  allow_ips: string;
  batch_id: number | null;
  rpm_limit: number;
  tpm_limit: number;
  max_concurrency: number;
  period_quota: number;
  quota_period: 'day' | 'week' | 'month' | null;
}

/** GET /api/token/{id}/limits */
export interface KeyLimits {
  rpm_limit: number;
  tpm_limit: number;
  max_concurrency: number;
  minute_requests: number;
  minute_tokens: number;
  in_flight: number;
  reset_seconds: number;
  period_quota: number;
  quota_period: 'day' | 'week' | 'month' | null;
  period_used: number;
  period_resets_at: number | null;
}

export interface BatchRecord {
  id: number;
  kind: 'issue' | 'status' | 'rotate';
  status: 'running' | 'completed' | 'failed' | 'cancelled';
  phase: string | null;
  requested: number;
  created: number;
  changed: number;
  processed: number;
  source_batch_id: number | null;
  params: Record<string, unknown>;
  error: string | null;
  note: string | null;
  started_time: number;
  finished_time: number | null;
}

export interface TaskRecord {
  id: string;
  family: 'A' | 'B' | 'C';
  model: string;
  status: 'queued' | 'processing' | 'completed' | 'failed';
  progress: number;
  token_name: string;
  channel: string;
  quota: number;
  billed: number | null;
  error_code: string | null;
  error_message: string | null;
  duration: number | null;
  resolution: string | null;
  request_id: string;
  workflow_id: string;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

/**
 * How prompt_tokens (every input token, cache reads and writes included) and completion_tokens (every output
 * token, reasoning included) split by usage dimension (tokenDetails in src/schemas/responses.ts).
 */
export interface TokenSplit {
  prompt_tokens: number;
  completion_tokens: number;
  /** prompt tokens read from the provider's prompt cache */
  cache_read_tokens: number;
  /** prompt tokens written to the prompt cache (5-minute and 1-hour) */
  cache_write_tokens: number;
  /** of cache_write_tokens, 1-hour writes */
  cache_write_1h_tokens: number;
  /** of completion_tokens, reasoning */
  reasoning_tokens: number;
  /** of the uncached prompt tokens, image input */
  image_input_tokens: number;
  /** of the uncached prompt tokens, audio input */
  audio_input_tokens: number;
  /** of completion_tokens, audio output */
  audio_output_tokens: number;
}

/** A row of GET /api/log/ (the ledger). */
export interface LogEntry extends TokenSplit {
  id: number;
  /** The quantity billed, in `unit` ('' for calls billed by tokens). */
  units: number;
  unit: string;
  created_at: number;
  request_id: string;
  token_name: string;
  model_name: string;
  quota: number;
  use_time: number;
  is_stream: boolean;
  channel?: string;
}

/** GET /api/log/stat: the sum of the ledger rows that match the filters. */
export interface LogTotals extends TokenSplit {
  quota: number;
  count: number;
}

/** A row of GET /api/log/stat/daily: per UTC day and model. */
export interface DailyUsage extends TokenSplit {
  /** YYYY-MM-DD (UTC) */
  day: string;
  model: string;
  quota: number;
  count: number;
}

export interface ChannelRecord {
  name: string;
  type: string;
  models: string[];
  priority: number;
  weight: number;
  source: 'replica' | 'tasks_24h';
  attempts: number;
  success_rate: number | null;
  latency_ms_p50: number | null;
  latency_ms_p95: number | null;
  consecutive_failures: number;
  cooling_until: number | null;
  last_attempt_at: number | null;
}

export interface WebhookAttempt {
  attempt: number;
  status: number | null;
  error: string | null;
  delivered: boolean;
  created_at: number;
}

/** `/api/batches/`: an inference batch of either API. */
export interface InferenceBatchRecord {
  id: string;
  api: 'openai' | 'anthropic';
  endpoint: string;
  status: string;
  token_name: string;
  total: number;
  succeeded: number;
  failed: number;
  canceled: number;
  expired: number;
  input_tokens: number;
  output_tokens: number;
  has_output: boolean;
  has_errors: boolean;
  created_at: number;
  ended_at: number | null;
  expires_at: number;
}
