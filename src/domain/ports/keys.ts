import type { BatchKind, BatchPhase, BatchStatus } from '../keys/batch-plan';
import type { QuotaPeriod } from '../limits/period';
import type { IssuedSettings, TokenRow, TokenSettings } from '../keys/token-record';
import type { Tx } from './transactions';

/** A new key as stored: its settings and its material already hashed (lookup) and sealed (to show it again). */
export interface NewKeyRecord extends IssuedSettings {
  userId: number;
  keyHash: Buffer;
  keyCipher: Buffer;
  batchId?: number | null;
  batchIndex?: number | null;
}

/** Optional filters of a key list: a batch's keys, a name substring, a status, a group ('' = default). */
export interface TokenListFilter {
  batchId?: number;
  keyword?: string;
  status?: number;
  group?: string;
  /** Cursor: only keys listed after this id (newest-first order: smaller ids); the page's offset is then ignored. */
  afterId?: number;
}

export interface Page {
  offset: number;
  limit: number;
}

/** A source key of a rotation, locked with the key whose balance it spends. */
export interface RotationSource extends TokenSettings {
  id: number;
  user_id: number;
  status: number;
  batch_index: number;
  /** The key whose remain_quota this key spends: itself, or its owner. */
  budget_id: number;
  budget_remain: number;
  budget_unlimited: boolean;
  /** The budget key's own owner (null unless a rotation moved it meanwhile). */
  budget_owner: number | null;
}

/** What authenticating a key reads of it. */
export interface TokenAuthRow {
  id: number;
  user_id: number;
  name: string;
  group: string;
  models: string;
  status: number;
  unlimited_quota: boolean;
  expired_time: number;
  rpm_limit: number;
  tpm_limit: number;
  max_concurrency: number;
  period_quota: number;
  quota_period: QuotaPeriod | null;
}

/** API keys (the tokens table). */
export interface KeyRepository {
  /** A key by the SHA-256 of its material (the hot path: a named statement). */
  authByHash(hash: Buffer): Promise<TokenAuthRow | null>;
  authById(id: number): Promise<TokenAuthRow | null>;
  /** Inserts keys; with a batch id, an index that exists already is skipped. Answers the ids inserted. */
  insert(rows: NewKeyRecord[], tx?: Tx): Promise<number[]>;
  /**
   * Inserts the keys `from..to` of a batch from one blob of fixed-width sealed records (key-sealer.ts), named
   * `<prefix>-00001` by index; an index that exists already is skipped. Answers how many were inserted.
   */
  insertRange(blob: Buffer, r: { userId: number; settings: IssuedSettings; namePrefix: string; batchId: number; from: number; to: number }, tx?: Tx): Promise<number>;
  /** The account's key (another account's reads as missing). */
  owned(accountId: number, id: number, tx?: Tx): Promise<TokenRow | null>;
  list(accountId: number, page: Page, filter: TokenListFilter): Promise<{ rows: TokenRow[]; total: number }>;
  /** The whole-object update of a key's settings (status untouched). */
  update(accountId: number, id: number, s: TokenSettings, tx?: Tx): Promise<void>;
  setStatus(accountId: number, id: number, status: number, tx?: Tx): Promise<void>;
  /** Deletes the key, its holds locked first (the lock order settles take). */
  delete(accountId: number, id: number, tx?: Tx): Promise<void>;
  /** Sets the status of these keys (and the counters the list reads). */
  setStatusOf(ids: number[], status: number, tx?: Tx): Promise<void>;
  /** Sets `status` on the keys of a batch with batch_index `from..to` that do not have it; answers their ids. */
  setBatchRangeStatus(r: { batchId: number; accountId: number; from: number; to: number; status: number }, tx?: Tx): Promise<number[]>;
  /**
   * What the key may spend: its budget's remain_quota and unlimited flag (its own, or its replacement's during a
   * rotation's grace), its used_quota, expiry and the credits its open holds keep.
   */
  balance(tokenId: number): Promise<{ remain_quota: number; used_quota: number; unlimited_quota: boolean; expired_time: number; held: number } | null>;
  /** What the key spent in its current periodic budget, and when that period started (epoch ms). */
  periodUsage(tokenId: number): Promise<{ period_used: number; period_start: number } | null>;
  /** A batch's keys in index order after `afterIndex`. */
  batchKeys(batchId: number, accountId: number, afterIndex: number, limit: number): Promise<Array<TokenRow & { batch_index: number }>>;
  /** How many keys a batch has, and its last index. */
  batchKeyCount(batchId: number, accountId: number, tx?: Tx): Promise<{ n: number; end: number }>;
  /**
   * Locks the keys of a batch with batch_index `from..to` and the keys whose balance they spend (budget rows first),
   * then reads them with their budgets. Answers the ids locked and the sources.
   */
  lockRotationSources(r: { sourceBatchId: number; accountId: number; from: number; to: number }, tx?: Tx): Promise<{ locked: Set<number>; sources: RotationSource[] }>;
  /** Of these keys of a batch, each one's id by its batch_index. */
  idsByIndex(batchId: number, ids: number[], tx?: Tx): Promise<Map<number, number>>;
  /** Each budget key's balance goes to its replacement: it and every key drawing on it now draw on the replacement. */
  moveBudgets(moves: Array<{ budget: number; replacement: number }>, tx?: Tx): Promise<void>;
}

/** A key batch's row. */
export interface KeyBatchRow {
  id: number;
  account_id: number;
  kind: BatchKind;
  status: BatchStatus;
  phase: BatchPhase | null;
  requested: number;
  created: number;
  changed: number;
  processed: number;
  source_batch_id: number | null;
  params: Record<string, unknown>;
  request_hash: string | null;
  error: string | null;
  workflow_started: boolean;
  started_ms: number;
  finished_ms: number | null;
  grace_ends_ms: number | null;
}

/** What a finished batch counted. */
export interface KeyBatchEnd {
  account_id: number;
  kind: string;
  status: BatchStatus;
  created: number;
  changed: number;
  requested: number;
  source_batch_id: number | null;
}

/** Bulk key rollouts (the key_batches table). */
export interface KeyBatchRepository {
  /** The account's batch (another account's reads as missing); `lock` holds it for the transaction. */
  owned(accountId: number, id: number, opts?: { lock?: boolean }, tx?: Tx): Promise<KeyBatchRow | null>;
  byIdempotencyKey(accountId: number, key: string, tx?: Tx): Promise<KeyBatchRow | null>;
  /** Serializes the transactions using one Idempotency-Key of an account until they end. */
  lockIdempotencyKey(accountId: number, key: string, tx: Tx): Promise<void>;
  /** A new running batch; null when the Idempotency-Key is taken. */
  insert(
    b: { accountId: number; kind: BatchKind; requested: number; params: Record<string, unknown>; sourceBatchId: number | null; idempotencyKey: string | null; requestHash: string; phase: BatchPhase },
    tx?: Tx,
  ): Promise<KeyBatchRow | null>;
  /** A running status change or rotation of the source batch, if any. */
  runningOnSource(sourceId: number, tx?: Tx): Promise<{ id: number; kind: string } | null>;
  list(accountId: number, page: Page): Promise<{ rows: KeyBatchRow[]; total: number }>;
  markWorkflowStarted(id: number): Promise<void>;
  /** A running batch ends `status` here (not through its workflow). */
  endRunning(id: number, status: 'failed' | 'cancelled', error: string | null): Promise<void>;

  /** The batch a step works for: account, kind, status and parameters. */
  step(batchId: number, tx?: Tx): Promise<{ account_id: number; kind: string; status: BatchStatus; params: Record<string, unknown> } | null>;
  /** Counts keys created by a chunk (`issuing`); answers the batch's total. */
  addCreated(batchId: number, n: number, opts: { progressed: boolean }, tx?: Tx): Promise<number>;
  /**
   * Counts a status chunk: keys changed, and the source keys visited up to `to` from where the last chunk
   * stopped (a retried chunk adds nothing). Answers the keys processed.
   */
  addStatusChunk(r: { batchId: number; changed: number; sourceBatchId: number; phase: BatchPhase; to: number }, tx?: Tx): Promise<number>;
  startGrace(batchId: number, endsAtMs: number): Promise<void>;
  /** Marks a running issue or rotation `tidying`; answers the keys it created (null when it is neither). */
  markTidying(batchId: number): Promise<number | null>;
  /** Whether another running issue batch of at least `minKeys` wrote a chunk in the last `withinSeconds`. */
  otherLargeIssueWriting(batchId: number, minKeys: number, withinSeconds: number): Promise<boolean>;
  /** VACUUM (ANALYZE) of the keys table. */
  tidyKeys(): Promise<void>;
  /** Ends a running batch; null when it was not running. */
  finish(batchId: number, status: Exclude<BatchStatus, 'running'>, error: string | null, tx?: Tx): Promise<KeyBatchEnd | null>;
  /** The counts of a batch (whatever its status). */
  counts(batchId: number, tx?: Tx): Promise<{ status: BatchStatus; created: number; changed: number } | null>;
}
