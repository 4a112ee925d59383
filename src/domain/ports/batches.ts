import type { BatchRecord } from '../batches/batch-record';

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

/** Inference batches and their lines (src/db/repositories/batches.ts). */
export interface BatchRepository {
  get(batchId: string): Promise<BatchRecord | null>;
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
  /** A batch that has not ended ends `failed` with `errors` (its workflow gave up). */
  failUnended(batchId: string, at: number, errors: unknown): Promise<void>;

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
  /** Lines the provider never ran end `canceled` or `expired`, counted in the batch. */
  endNotRun(batchId: string, idxs: number[], state: 'canceled' | 'expired'): Promise<void>;
  providerBatchEnded(batchId: string, channel: string, at: number): Promise<void>;
}
