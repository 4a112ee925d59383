import type { BatchApi, BatchEndpoint, BatchRecord, BatchStatus } from '../batches/batch-record';
import type { Tx } from './transactions';

/** A pending line as the runner takes it. */
export interface PendingLine {
  idx: number;
  custom_id: string;
  body: unknown;
  request_id: string;
}

/** A line's outcome as recorded (its state changes once, from pending). */
export interface LineResult {
  idx: number;
  state: 'succeeded' | 'failed';
  status: number;
  result: unknown;
}

/** A line with its outcome, as the output and error files show it. */
export interface LineRecord {
  idx: number;
  custom_id: string;
  state: string;
  status_code: number | null;
  result: unknown;
  request_id: string;
}

/** Inference batches and their lines (src/db/repositories/batches.ts). */
export interface BatchRepository {
  get(batchId: string): Promise<BatchRecord | null>;
  /** The account's batch of `api` (any API when omitted), unless deleted. */
  owned(accountId: number, id: string, api?: BatchApi): Promise<BatchRecord | null>;
  insert(
    b: {
      id: string; api: BatchApi; accountId: number; tokenId: number; tokenName: string; endpoint: BatchEndpoint; inputFileId: string | null; status: BatchStatus;
      metadata: unknown; callbackUrl: string | null; publicOrigin: string; requestId: string; total: number; createdAt: number; inProgressAt: number | null; expiresAt: number;
    },
    tx?: Tx,
  ): Promise<BatchRecord>;
  /**
   * A page of the account's batches of `api`, newest first, `limit + 1` rows so the caller knows whether more follow:
   * older than `after` or, in ascending order, newer than `before`.
   */
  page(accountId: number, api: BatchApi, q: { limit: number; after?: string; before?: string }): Promise<BatchRecord[]>;
  /** The account's batches of both APIs, newest first, by offset, and how many match. */
  listForAccount(accountId: number, q: { offset: number; limit: number; status?: string }): Promise<{ items: BatchRecord[]; total: number }>;
  /** A validating or running batch moves to `cancelling`. */
  markCancelling(batchId: string, at: number): Promise<void>;
  delete(batchId: string): Promise<void>;
  /** Up to `limit` lines after index `afterIdx`, in order, whatever their state. */
  lines(batchId: string, afterIdx: number, limit: number): Promise<Array<{ idx: number; custom_id: string; state: string; result: unknown }>>;
  /** Up to `limit` pending lines the gateway runs itself (no provider channel), after index `afterIdx`, in order. */
  pendingLines(batchId: string, afterIdx: number, limit: number): Promise<PendingLine[]>;
  /** Whether any line the gateway runs itself is still pending. */
  hasPending(batchId: string): Promise<boolean>;
  /**
   * Records outcomes of pending lines, the batch's counts and the tokens of their ledger rows, at once: a line
   * already recorded is left alone, so each line's tokens are added once.
   */
  recordLines(batchId: string, results: LineResult[]): Promise<void>;
  /** Every line still pending (and not sent to a provider) ends failed with `error`; a 429 marks the batch's quota exhausted. */
  failPending(batchId: string, status: number, error: unknown): Promise<void>;
  /** The batch ends `failed` with `errors`, when its status is one of `whileIn` (any status when null). */
  fail(batchId: string, at: number, errors: unknown, whileIn: BatchStatus[] | null, tx?: Tx): Promise<void>;
  /** Drops every line of the batch (a validation run again from the start, or one that failed). */
  clearLines(batchId: string, tx?: Tx): Promise<void>;
  insertLines(batchId: string, lines: Array<{ idx: number; customId: string; body: unknown; requestId: string }>, tx?: Tx): Promise<void>;
  /** A validated batch starts running with `total` lines (a cancel that came meanwhile stays). */
  startRun(batchId: string, at: number, total: number, tx?: Tx): Promise<void>;
  /** A running batch moves to `finalizing`. */
  markFinalizing(batchId: string, at: number): Promise<void>;
  /**
   * Lines still pending (of `idxs` when given: those a provider never ran) end `canceled` or `expired`, counted in
   * the batch.
   */
  endUnsent(batchId: string, state: 'canceled' | 'expired', idxs?: number[]): Promise<void>;
  /** Whether any line is in one of `states`. */
  hasLinesIn(batchId: string, states: string[]): Promise<boolean>;
  /** Up to `limit` lines in `states` after index `afterIdx`, in order, with their outcomes. */
  linesIn(batchId: string, states: string[], afterIdx: number, limit: number): Promise<LineRecord[]>;
  /** The batch's end: its status, the timestamp of it, its files, and its usage counted from its lines' ledger rows. */
  end(batchId: string, e: { status: 'cancelled' | 'expired' | 'completed'; at: number; outputFileId: string | null; errorFileId: string | null }): Promise<void>;

  /** The models named by pending lines not yet given a channel. */
  pendingModels(batchId: string): Promise<string[]>;
  /** Gives the pending lines of `model` not yet given a channel to `channel` (a provider batch API). */
  assignChannel(batchId: string, model: string, channel: string): Promise<void>;
  /** The channels with pending lines assigned, in name order. */
  channelsWithPending(batchId: string): Promise<string[]>;
  /** The provider batch of the batch's lines on `channel`, once its intent is recorded. */
  providerBatch(batchId: string, channel: string): Promise<{ providerBatchId: string | null; createdAt: number } | null>;
  /** The pending lines of `channel` (only those sent as `providerBatchId` when given), in order. */
  channelLines(batchId: string, channel: string, providerBatchId?: string): Promise<PendingLine[]>;
  markQuotaExhausted(batchId: string): Promise<void>;
  /** Records the intent to create a provider batch (kept when one is recorded); answers the recorded intent's time. */
  recordProviderIntent(batchId: string, channel: string, lines: number, at: number): Promise<number>;
  /** The provider's id of the batch on `channel`, on it and on its pending lines. */
  setProviderBatchId(batchId: string, channel: string, providerBatchId: string): Promise<void>;
  providerBatchEnded(batchId: string, channel: string, at: number): Promise<void>;
}
