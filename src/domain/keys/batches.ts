import { createHash } from 'node:crypto';
import { ConflictError, NotFoundError, UnavailableError, ValidationError } from '../errors';
import type { BatchKind, BatchPhase, BatchPlan, BatchStatus, ChunkTuning } from './batch-plan';
import { MAX_CHUNK_SIZE } from './batch-steps';
import type { KeyCipher } from './key-material';
import type { KeyBatchRow } from '../ports/keys';
import type { Repositories } from '../ports/repositories';
import type { Tx } from '../ports/transactions';
import { type IssuedSettings, type TokenRecord, toTokenRecord } from './token-record';
import { assertNotExpired, Page, TokenService } from './tokens';

// Bulk key rollouts: issuing, status changes and rotation run as durable workflows (keys:<batch id>).
// This service records the batch (the read model), the audit event and the idempotency key, then asks
// the injected starter to run the workflow. It knows nothing of Temporal beyond that port.

/** A rollout to every user of a platform is one batch. */
export const MAX_BATCH_COUNT = 1_000_000;
/** 30 days: a longer grace period is almost certainly a unit mistake. */
export const MAX_GRACE_SECONDS = 30 * 24 * 3600;

export interface BatchSettings extends ChunkTuning {
  /** How long DELETE waits for the workflow to record `cancelled` before answering with `running`. */
  cancelWaitMs: number;
}

export const DEFAULT_BATCH_SETTINGS: BatchSettings = {
  chunkSize: 10_000,
  parallelChunks: 4,
  continueAsNewAfterChunks: 50,
  heartbeatTimeoutMs: 30_000,
  cancelWaitMs: 10_000,
};

/**
 * Thrown by a starter when workflow keys:<id> exists but belongs to another batch row (a database reset
 * while Temporal kept its history): starting again can never succeed, so the batch fails.
 */
export class BatchWorkflowConflictError extends Error {}

/** The port to the workflow engine: both calls are idempotent. */
export interface BatchWorkflowStarter {
  /**
   * Starts workflow keys:<plan.batchId>; succeeds when that batch's workflow was started already.
   * `owner` identifies the batch row, so a workflow id left over from another database is not taken for it
   * (BatchWorkflowConflictError). Any other error is taken as the engine being unreachable for now.
   */
  start(plan: BatchPlan, owner: string): Promise<void>;
  /** Requests cancellation; false when there is no such workflow. */
  cancel(batchId: number): Promise<boolean>;
}

export interface BatchServiceDeps {
  repos: Pick<Repositories, 'keys' | 'keyBatches' | 'audit' | 'transactions'>;
  tokens: Pick<TokenService, 'list'>;
  /** Decrypts the keys a download streams. */
  cipher: KeyCipher;
  /** null when the process has no Temporal connection: batch writes answer 503. */
  starter: BatchWorkflowStarter | null;
  settings?: Partial<BatchSettings>;
}

export interface IssueBatchInput extends IssuedSettings {
  count: number;
}

export interface BatchRecord {
  id: number;
  kind: BatchKind;
  status: BatchStatus;
  phase: BatchPhase | null;
  /** Keys the batch is to handle: count (issue) or the source batch's keys when it started (status, rotate). */
  requested: number;
  /** Keys this batch created (issue, rotate). */
  created: number;
  /** Keys whose status this batch changed (status; rotate: old keys disabled). */
  changed: number;
  /** Source keys visited by the status change so far (status; rotate while disabling). */
  processed: number;
  source_batch_id: number | null;
  params: Record<string, unknown>;
  error: string | null;
  /** What a cancelled or failed batch left behind, in words. */
  note: string | null;
  started_time: number;
  finished_time: number | null;
  grace_ends_time: number | null;
}

type BatchRow = KeyBatchRow;

const PUBLIC_PARAMS: Record<BatchKind, string[]> = {
  issue: ['name', 'remain_quota', 'unlimited_quota', 'group', 'models', 'expired_time'],
  status: ['status'],
  rotate: ['grace_seconds'],
};

function noteFor(row: BatchRow): string | null {
  const keysAt = `/api/token/batch/${row.id}/keys`;
  if (row.status === 'running' && !row.workflow_started) {
    return 'not started yet: the workflow engine could not be reached; reading this batch or repeating the request '
      + 'with the same Idempotency-Key starts it (DELETE cancels it)';
  }
  if (row.status === 'cancelled') {
    if (row.kind === 'issue') return `cancelled: the ${row.created} keys already issued remain and are listed at ${keysAt}`;
    if (row.kind === 'status') return `cancelled: ${row.changed} keys had already changed status; the others kept theirs`;
    if (row.phase === 'disabling') {
      return `cancelled while disabling the old keys: ${row.changed} were disabled, the rest stay enabled; `
        + `the ${row.created} replacement keys remain and are listed at ${keysAt}`;
    }
    return `cancelled before the old keys were disabled: they stay enabled; the ${row.created} replacement keys `
      + `issued remain and are listed at ${keysAt}`;
  }
  if (row.status === 'failed' && row.kind !== 'status' && row.created > 0) {
    return `failed: the ${row.created} keys already issued remain and are listed at ${keysAt}`;
  }
  return null;
}

const seconds = (ms: number | null) => (ms == null ? null : Math.floor(ms / 1000));

export function toBatchRecord(row: BatchRow): BatchRecord {
  const params: Record<string, unknown> = {};
  for (const k of PUBLIC_PARAMS[row.kind]) if (k in row.params) params[k] = row.params[k];
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    phase: row.phase,
    requested: row.requested,
    created: row.created,
    changed: row.changed,
    processed: row.processed,
    source_batch_id: row.source_batch_id,
    params,
    error: row.error,
    note: noteFor(row),
    started_time: Math.floor(row.started_ms / 1000),
    finished_time: seconds(row.finished_ms),
    grace_ends_time: seconds(row.grace_ends_ms),
  };
}

/** sha256 of the canonical request: the action, its target and the parsed body with keys sorted. */
export function requestHash(action: string, target: number | null, body: Record<string, unknown>): string {
  const sorted = Object.fromEntries(Object.keys(body).sort().map((k) => [k, body[k]]));
  return createHash('sha256').update(JSON.stringify({ action, target, body: sorted })).digest('hex');
}

function resolveSettings(partial: Partial<BatchSettings> | undefined): BatchSettings {
  const s = { ...DEFAULT_BATCH_SETTINGS, ...partial };
  if (!Number.isInteger(s.chunkSize) || s.chunkSize < 1 || s.chunkSize > MAX_CHUNK_SIZE) {
    throw new Error(`batch chunkSize must be a whole number from 1 to ${MAX_CHUNK_SIZE}`);
  }
  if (!Number.isInteger(s.continueAsNewAfterChunks) || s.continueAsNewAfterChunks < 1) {
    throw new Error('batch continueAsNewAfterChunks must be a whole number of at least 1');
  }
  if (!Number.isInteger(s.parallelChunks) || s.parallelChunks! < 1 || s.parallelChunks! > 16) {
    throw new Error('batch parallelChunks must be a whole number from 1 to 16');
  }
  if (!(s.heartbeatTimeoutMs >= 1000)) throw new Error('batch heartbeatTimeoutMs must be at least 1000');
  return s;
}

/** The workflow plan of a batch row; rebuilt from the row alone, so a replayed request can restart it. */
function planFor(row: BatchRow, tuning: ChunkTuning): BatchPlan {
  const end = Number(row.params.index_end ?? 0);
  const base = { ...tuning, batchId: row.id, end, next: 1 };
  switch (row.kind) {
    case 'issue':
      return { kind: 'issue', ...base };
    case 'status':
      return { kind: 'status', ...base, sourceBatchId: row.source_batch_id!, status: row.params.status as 1 | 2 };
    case 'rotate':
      return {
        kind: 'rotate', ...base, sourceBatchId: row.source_batch_id!, graceSeconds: Number(row.params.grace_seconds),
        phase: 'issuing',
      };
  }
}

interface Prepared {
  requested: number;
  params: Record<string, unknown>;
  sourceBatchId: number | null;
  audit: Record<string, unknown>;
}

export interface Started {
  batch: BatchRecord;
  /** true when an Idempotency-Key matched an earlier identical request: nothing new was started. */
  replayed: boolean;
}

export interface LaunchOptions {
  idempotencyKey?: string;
  requestId?: string;
}

export function createBatchService(deps: BatchServiceDeps) {
  const { repos } = deps;
  const { keyBatches } = repos;
  /** Read at each start; tests and operators may tune it on a live service. */
  const settings = resolveSettings(deps.settings);

  async function readOwned(accountId: number, id: number, opts: { lock?: boolean; tx?: Tx } = {}): Promise<BatchRow> {
    const row = await keyBatches.owned(accountId, id, { lock: opts.lock }, opts.tx);
    // Another account's batch reads exactly like a missing one.
    if (!row) throw new NotFoundError(`batch ${id} not found`, 'id');
    return row;
  }

  function requireStarter(): BatchWorkflowStarter {
    if (!deps.starter) throw new UnavailableError('bulk key operations need the workflow engine, which is not configured');
    return deps.starter;
  }

  /**
   * Starts (or re-starts, idempotently) the workflow of a running batch. When the engine cannot be reached
   * the batch stays running, unstarted (GET says so), and this throws 503: repeating the request with the
   * same Idempotency-Key, or reading the batch, starts it later. Only a workflow id taken by another batch
   * row, which no retry can fix, fails the batch.
   */
  async function ensureStarted(row: BatchRow): Promise<BatchRow> {
    if (row.status !== 'running') return row;
    const starter = requireStarter();
    try {
      await starter.start(planFor(row, resolveSettings(settings)), `${row.account_id}:${row.started_ms}`);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (err instanceof BatchWorkflowConflictError) {
        await keyBatches.endRunning(row.id, 'failed', `the workflow could not be started: ${reason}`);
        throw new UnavailableError(`batch ${row.id} could not be started: ${reason}`);
      }
      throw new UnavailableError(
        `batch ${row.id} was recorded but its workflow could not be started (${reason}); it stays running, not started: `
        + 'repeat the request with the same Idempotency-Key (or GET the batch) to start it',
      );
    }
    if (!row.workflow_started) {
      await keyBatches.markWorkflowStarted(row.id);
      return { ...row, workflow_started: true };
    }
    return row;
  }

  function replay(existing: BatchRow, hash: string, key: string): Promise<BatchRow> {
    if (existing.request_hash !== hash) {
      throw new ConflictError(`Idempotency-Key '${key}' was already used with a different request`, 'Idempotency-Key');
    }
    return ensureStarted(existing);
  }

  /**
   * The shared path of every batch action: idempotency, one transaction for the row and its audit event,
   * then the workflow start after commit (a crash in between is healed by replaying the same key).
   */
  async function launch(
    accountId: number,
    kind: BatchKind,
    target: number | null,
    body: Record<string, unknown>,
    opts: LaunchOptions,
    prepare: (tx: Tx) => Promise<Prepared>,
  ): Promise<Started> {
    const hash = requestHash(kind, target, body);
    const key = opts.idempotencyKey;
    if (key !== undefined) {
      const existing = await keyBatches.byIdempotencyKey(accountId, key);
      if (existing) return { batch: toBatchRecord(await replay(existing, hash, key)), replayed: true };
    }
    requireStarter();
    const outcome = await repos.transactions.run(async (tx): Promise<{ inserted: BatchRow } | { existing: BatchRow }> => {
      if (key !== undefined) {
        // Concurrent retries of one request (same account and key) run this one at a time, and a later one
        // finds the row the first inserted before its checks on the source could answer 409 "already has a
        // running batch" (that batch being its own).
        await keyBatches.lockIdempotencyKey(accountId, key, tx);
        const existing = await keyBatches.byIdempotencyKey(accountId, key, tx);
        if (existing) return { existing };
      }
      const prep = await prepare(tx);
      const inserted = await keyBatches.insert(
        {
          accountId, kind, requested: prep.requested, params: prep.params, sourceBatchId: prep.sourceBatchId, idempotencyKey: key ?? null,
          requestHash: hash, phase: kind === 'status' ? 'updating' : 'issuing',
        },
        tx,
      );
      // The advisory lock makes a conflict impossible; kept as the last guard of the unique key.
      if (!inserted) throw new ConflictError(`Idempotency-Key '${key}' is being used by a concurrent request; retry`, 'Idempotency-Key');
      await repos.audit.record({
        accountId,
        action: kind === 'issue' ? 'key_batch.create' : `key_batch.${kind}`,
        targetType: 'key_batch',
        targetId: inserted.id,
        requestId: opts.requestId,
        details: { kind, requested: prep.requested, ...prep.audit, ...(key !== undefined ? { idempotency_key: key } : {}) },
      }, tx);
      return { inserted };
    });
    if ('existing' in outcome) {
      // A concurrent request with the same key won the insert; answer as its replay.
      return { batch: toBatchRecord(await replay(outcome.existing, hash, key!)), replayed: true };
    }
    return { batch: toBatchRecord(await ensureStarted(outcome.inserted)), replayed: false };
  }

  /** Locks the source batch and checks a status change or rotation may run on its keys. */
  async function prepareOnSource(tx: Tx, accountId: number, sourceId: number, action: string) {
    const source = await readOwned(accountId, sourceId, { lock: true, tx });
    if (source.kind === 'status') {
      throw new ValidationError(`batch ${sourceId} is a status change and has no keys of its own`, 'id');
    }
    if (source.status === 'running') {
      throw new ConflictError(`batch ${sourceId} is still running; wait for it to finish or cancel it before a ${action}`);
    }
    const busy = await keyBatches.runningOnSource(sourceId, tx);
    if (busy) throw new ConflictError(`batch ${sourceId} already has a running ${busy.kind} batch ${busy.id}`);
    return repos.keys.batchKeyCount(sourceId, accountId, tx);
  }

  return {
    settings,

    async issue(accountId: number, input: IssueBatchInput, opts: LaunchOptions = {}): Promise<Started> {
      if (!Number.isInteger(input.count) || input.count < 1 || input.count > MAX_BATCH_COUNT) {
        throw new ValidationError(`count must be a whole number from 1 to ${MAX_BATCH_COUNT}`, 'count');
      }
      const { count, ...keySettings } = input;
      return launch(accountId, 'issue', null, { count, ...keySettings }, opts, async () => {
        // Checked after the idempotency lookup: replaying a request whose expiry has since passed still answers.
        assertNotExpired(keySettings.expired_time);
        return {
          requested: count,
          params: { ...keySettings, index_end: count },
          sourceBatchId: null,
          audit: { name: keySettings.name },
        };
      });
    },

    async setStatus(accountId: number, sourceId: number, status: 1 | 2, opts: LaunchOptions = {}): Promise<Started> {
      return launch(accountId, 'status', sourceId, { status }, opts, async (tx) => {
        const keys = await prepareOnSource(tx, accountId, sourceId, 'status change');
        return {
          requested: keys.n,
          params: { status, index_end: keys.end },
          sourceBatchId: sourceId,
          audit: { source_batch_id: sourceId, status },
        };
      });
    },

    async rotate(accountId: number, sourceId: number, graceSeconds: number, opts: LaunchOptions = {}): Promise<Started> {
      if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_GRACE_SECONDS) {
        throw new ValidationError(`grace_seconds must be a whole number from 0 to ${MAX_GRACE_SECONDS}`, 'grace_seconds');
      }
      return launch(accountId, 'rotate', sourceId, { grace_seconds: graceSeconds }, opts, async (tx) => {
        const keys = await prepareOnSource(tx, accountId, sourceId, 'rotation');
        return {
          requested: keys.n,
          params: { grace_seconds: graceSeconds, index_end: keys.end },
          sourceBatchId: sourceId,
          audit: { source_batch_id: sourceId, grace_seconds: graceSeconds },
        };
      });
    },

    /** A running batch whose workflow never started (the engine was unreachable) is started again here. */
    async get(accountId: number, id: number): Promise<BatchRecord> {
      const row = await readOwned(accountId, id);
      if (row.status === 'running' && !row.workflow_started && deps.starter) {
        try {
          await ensureStarted(row);
        } catch {
          // Still unreachable: the record says it has not started.
        }
        return toBatchRecord(await readOwned(accountId, id));
      }
      return toBatchRecord(row);
    },

    async list(accountId: number, page: Page): Promise<{ items: BatchRecord[]; total: number }> {
      const { rows, total } = await keyBatches.list(accountId, page);
      return { items: rows.map(toBatchRecord), total };
    },

    /** The keys this batch created, in batch_index order, paged like the key list. */
    async keys(accountId: number, id: number, page: Page): Promise<{ items: TokenRecord[]; total: number }> {
      await readOwned(accountId, id);
      return deps.tokens.list(accountId, page, { batchId: id });
    },

    /**
     * Every key of a batch in issue order, read a chunk at a time by batch_index (a keyset, not an offset): a
     * million keys stream out without being held in memory. Ownership is checked before the first row.
     */
    async *streamKeys(accountId: number, id: number, chunk = 5000): AsyncGenerator<TokenRecord> {
      await readOwned(accountId, id);
      let after = -1;
      for (;;) {
        const rows = await repos.keys.batchKeys(id, accountId, after, chunk);
        for (const row of rows) yield toTokenRecord(row, deps.cipher);
        if (rows.length < chunk) return;
        after = rows[rows.length - 1].batch_index;
      }
    },

    /**
     * Cancels a running batch. Work already done stays (keys issued remain, statuses already changed stay);
     * a rotation cancelled before its disabling phase leaves the old keys enabled.
     */
    async cancel(accountId: number, id: number, requestId?: string): Promise<BatchRecord> {
      const row = await readOwned(accountId, id);
      if (row.status === 'cancelled') return toBatchRecord(row);
      if (row.status !== 'running') throw new ConflictError(`batch ${id} is already ${row.status}; there is nothing to cancel`);
      const existed = await requireStarter().cancel(id);
      await repos.audit.record({
        accountId, action: 'key_batch.cancel', targetType: 'key_batch', targetId: id, requestId,
        details: { kind: row.kind, source_batch_id: row.source_batch_id },
      });
      if (!existed) {
        // No workflow to record it: the batch never started (or its run is gone); close it here.
        await keyBatches.endRunning(id, 'cancelled', null);
      }
      const deadline = Date.now() + settings.cancelWaitMs;
      let current = await readOwned(accountId, id);
      while (current.status === 'running' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        current = await readOwned(accountId, id);
      }
      return toBatchRecord(current);
    },
  };
}

export type BatchService = ReturnType<typeof createBatchService>;
