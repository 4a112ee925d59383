/** A batch's row as both APIs read it, and their two views of it. */

export type BatchApi = 'openai' | 'anthropic';

export type BatchStatus = 'validating' | 'in_progress' | 'finalizing' | 'completed' | 'failed' | 'expired' | 'cancelling' | 'cancelled';

/** The endpoints a batch's lines may call. */
export const OPENAI_BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/embeddings', '/v1/responses'] as const;
export const MESSAGES_ENDPOINT = '/v1/messages';
export type BatchEndpoint = (typeof OPENAI_BATCH_ENDPOINTS)[number] | typeof MESSAGES_ENDPOINT;

export interface BatchUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface BatchRecord {
  id: string;
  api: BatchApi;
  accountId: number;
  tokenId: number | null;
  tokenName: string;
  endpoint: BatchEndpoint;
  inputFileId: string | null;
  completionWindow: string;
  status: BatchStatus;
  errors: { object: 'list'; data: unknown[] } | null;
  outputFileId: string | null;
  errorFileId: string | null;
  metadata: Record<string, string> | null;
  callbackUrl: string | null;
  publicOrigin: string | null;
  requestId: string;
  total: number;
  succeeded: number;
  failed: number;
  canceled: number;
  expired: number;
  quotaExhausted: boolean;
  usage: BatchUsage;
  createdAt: number;
  inProgressAt: number | null;
  expiresAt: number;
  finalizingAt: number | null;
  completedAt: number | null;
  failedAt: number | null;
  expiredAt: number | null;
  cancellingAt: number | null;
  cancelledAt: number | null;
  endedAt: number | null;
}

export const BATCH_COLUMNS = `id, api, account_id, token_id, token_name, endpoint, input_file_id, completion_window, status, errors,
  output_file_id, error_file_id, metadata, callback_url, public_origin, request_id, total, succeeded, failed, canceled, expired,
  quota_exhausted, usage_input, usage_cached, usage_output, usage_reasoning, created_at, in_progress_at, expires_at, finalizing_at, completed_at, failed_at, expired_at, cancelling_at,
  cancelled_at, ended_at`;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function batchRecordOf(r: Record<string, unknown>): BatchRecord {
  return {
    id: r.id as string,
    api: r.api as BatchApi,
    accountId: Number(r.account_id),
    tokenId: num(r.token_id),
    tokenName: r.token_name as string,
    endpoint: r.endpoint as BatchEndpoint,
    inputFileId: (r.input_file_id as string | null) ?? null,
    completionWindow: r.completion_window as string,
    status: r.status as BatchStatus,
    errors: (r.errors as BatchRecord['errors']) ?? null,
    outputFileId: (r.output_file_id as string | null) ?? null,
    errorFileId: (r.error_file_id as string | null) ?? null,
    metadata: (r.metadata as Record<string, string> | null) ?? null,
    callbackUrl: (r.callback_url as string | null) ?? null,
    publicOrigin: (r.public_origin as string | null) ?? null,
    requestId: r.request_id as string,
    total: Number(r.total),
    succeeded: Number(r.succeeded),
    failed: Number(r.failed),
    canceled: Number(r.canceled),
    expired: Number(r.expired),
    quotaExhausted: r.quota_exhausted === true,
    usage: usageOf(Number(r.usage_input), Number(r.usage_cached), Number(r.usage_output), Number(r.usage_reasoning)),
    createdAt: Number(r.created_at),
    inProgressAt: num(r.in_progress_at),
    expiresAt: Number(r.expires_at),
    finalizingAt: num(r.finalizing_at),
    completedAt: num(r.completed_at),
    failedAt: num(r.failed_at),
    expiredAt: num(r.expired_at),
    cancellingAt: num(r.cancelling_at),
    cancelledAt: num(r.cancelled_at),
    endedAt: num(r.ended_at),
  };
}

export function usageOf(input: number, cached: number, output: number, reasoning: number): BatchUsage {
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cached },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + output,
  };
}

export const isEnded = (s: BatchStatus) => s === 'completed' || s === 'failed' || s === 'expired' || s === 'cancelled';

/** The batch object exactly as OpenAI's. */
export function openAiBatchView(b: BatchRecord) {
  return {
    id: b.id,
    object: 'batch' as const,
    endpoint: b.endpoint,
    errors: b.errors,
    input_file_id: b.inputFileId ?? '',
    completion_window: b.completionWindow,
    status: b.status,
    output_file_id: b.outputFileId,
    error_file_id: b.errorFileId,
    created_at: b.createdAt,
    in_progress_at: b.inProgressAt,
    expires_at: b.expiresAt,
    finalizing_at: b.finalizingAt,
    completed_at: b.completedAt,
    failed_at: b.failedAt,
    expired_at: b.expiredAt,
    cancelling_at: b.cancellingAt,
    cancelled_at: b.cancelledAt,
    request_counts: { total: b.total, completed: b.succeeded, failed: b.failed + b.canceled + b.expired },
    usage: b.usage,
    metadata: b.metadata,
  };
}

const iso = (s: number | null) => (s === null ? null : new Date(s * 1000).toISOString());

/** The message batch object exactly as Anthropic's; `results_url` points at this gateway once the batch ended. */
export function anthropicBatchView(b: BatchRecord, origin: string) {
  const ended = isEnded(b.status);
  const processing = ended ? 0 : Math.max(0, b.total - b.succeeded - b.failed - b.canceled - b.expired);
  return {
    id: b.id,
    type: 'message_batch' as const,
    processing_status: ended ? ('ended' as const) : b.status === 'cancelling' ? ('canceling' as const) : ('in_progress' as const),
    request_counts: { processing, succeeded: b.succeeded, errored: b.failed, canceled: b.canceled, expired: b.expired },
    ended_at: ended ? iso(b.endedAt ?? b.completedAt ?? b.cancelledAt ?? b.expiredAt ?? b.failedAt) : null,
    created_at: iso(b.createdAt)!,
    expires_at: iso(b.expiresAt)!,
    archived_at: null,
    cancel_initiated_at: iso(b.cancellingAt),
    results_url: ended ? `${origin}/v1/messages/batches/${b.id}/results` : null,
  };
}
