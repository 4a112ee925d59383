import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../../db/pool';
import { recordAudit } from '../audit';
import { ConflictError, NotFoundError } from '../errors';
import type { BatchOutcome, BatchStatus, ChunkRange, SourceChunkRange, StatusChunkRange } from './batch-plan';
import type { KeyChangeBus } from './key-change-bus';
import type { KeyCipher } from './key-material';
import type { KeySealer } from './key-sealer';
import { lockRotationSources, moveBudgets, replacementQuota, RotationSource } from './rotation-budget';
import type { TokenSettings } from './token-record';
import { insertKeyRange, insertKeys, NewKeyRow } from './tokens';

// The steps a bulk-key workflow runs, one transaction each. Every step is idempotent: a retried or
// duplicated call (a worker killed after commit, a timed-out attempt still running) changes nothing
// twice. Key material is generated and stored here and never returned.

/** Largest chunk: one transaction of this many rows stays well under the activity's heartbeat timeout. */
export const MAX_CHUNK_SIZE = 20_000;

interface StepBatch {
  account_id: number;
  kind: string;
  status: BatchStatus;
  params: Record<string, unknown>;
}

async function runningBatch(tx: PoolClient, batchId: number): Promise<StepBatch> {
  const res = await tx.query<StepBatch>('SELECT account_id, kind, status, params FROM key_batches WHERE id = $1', [batchId]);
  const batch = res.rows[0];
  if (!batch) throw new NotFoundError(`batch ${batchId} not found`, 'id');
  // A finished batch never gets more work, even from a late duplicate activity attempt.
  if (batch.status !== 'running') throw new ConflictError(`batch ${batchId} is ${batch.status}`);
  return batch;
}

/**
 * Creates the keys `from..to` of an issue batch; rows that exist already are skipped. The key material is made
 * before the transaction opens (on the sealer's threads in a worker), so a connection is held only for the insert.
 */
export async function issueKeyChunk(db: Pool, sealer: KeySealer, r: ChunkRange): Promise<{ inserted: number; created: number }> {
  const blob = await sealer.seal(Math.max(0, r.to - r.from + 1));
  return inTransaction(db, async (tx) => {
    const batch = await runningBatch(tx, r.batchId);
    const p = batch.params as unknown as TokenSettings;
    const inserted = await insertKeyRange(tx, blob, { userId: batch.account_id, settings: p, namePrefix: p.name, batchId: r.batchId, from: r.from, to: r.to });
    const res = await tx.query<{ created: number }>(
      `UPDATE key_batches SET created = created + $2, phase = 'issuing', progressed_at = now() WHERE id = $1 RETURNING created`,
      [r.batchId, inserted],
    );
    return { inserted, created: res.rows[0].created };
  });
}

/**
 * Issues one replacement per key of the source batch with batch_index `from..to` (same name, quota
 * settings, group, models, expiry and status; batch_index kept), into the rotation batch. A limited key's
 * balance moves to its replacement, which the old key then spends too (rotation-budget.ts).
 */
export async function rotateKeyChunk(db: Pool, cipher: KeyCipher, r: SourceChunkRange): Promise<{ inserted: number; created: number }> {
  return inTransaction(db, async (tx) => {
    const batch = await runningBatch(tx, r.batchId);
    const src = await lockRotationSources(tx, { ...r, accountId: batch.account_id });
    const toRow = (s: RotationSource): NewKeyRow => ({
      userId: s.user_id,
      name: s.name,
      ...replacementQuota(s),
      group: s.group,
      models: s.models,
      expired_time: s.expired_time,
      batchId: r.batchId,
      batchIndex: s.batch_index,
    });
    const enabled = await insertKeys(tx, cipher, src.filter((s) => s.status === 1).map(toRow));
    // A disabled key is replaced by a disabled key: rotation never re-opens access.
    const disabled = await insertKeys(tx, cipher, src.filter((s) => s.status !== 1).map(toRow));
    if (disabled.length > 0) await tx.query('SELECT tokens_set_status($1::bigint[], 2)', [disabled]);
    await moveBudgets(tx, r.batchId, src, [...enabled, ...disabled]);
    const inserted = enabled.length + disabled.length;
    const res = await tx.query<{ created: number }>(
      `UPDATE key_batches SET created = created + $2, phase = 'issuing' WHERE id = $1 RETURNING created`,
      [r.batchId, inserted],
    );
    return { inserted, created: res.rows[0].created };
  });
}

/**
 * Sets the status of the source batch's keys with batch_index `from..to`. The changed keys are announced
 * on the key-change bus in one publish inside the transaction and one afterCommit of its receipt after
 * commit, so no replica keeps serving them.
 */
export async function setKeyStatusChunk(
  db: Pool,
  keyChanges: KeyChangeBus,
  r: StatusChunkRange,
): Promise<{ changed: number; processed: number }> {
  const { change, processed } = await inTransaction(db, async (tx) => {
    const batch = await runningBatch(tx, r.batchId);
    const res = await tx.query<{ id: number }>(
      `SELECT o_id AS id FROM tokens_set_status(
         ARRAY(SELECT id FROM tokens WHERE batch_id = $1 AND user_id = $2 AND batch_index BETWEEN $3 AND $4 AND status <> $5), $5)`,
      [r.sourceBatchId, batch.account_id, r.from, r.to, r.status],
    );
    const changedIds = res.rows.map((row) => row.id);
    const change = await keyChanges.publish(tx, changedIds);
    // processed = source keys up to `to`, counted from where the last chunk stopped (processed_through): a retried
    // chunk adds nothing, and no chunk counts the keys before it again.
    const upd = await tx.query<{ processed: number }>(
      `UPDATE key_batches SET changed = changed + $2, phase = $4,
              processed = processed + (SELECT count(*) FROM tokens
                                        WHERE batch_id = $3 AND batch_index > key_batches.processed_through AND batch_index <= $5),
              processed_through = GREATEST(processed_through, $5)
        WHERE id = $1 RETURNING processed`,
      [r.batchId, changedIds.length, r.sourceBatchId, r.phase, r.to],
    );
    return { change, processed: upd.rows[0].processed };
  });
  await keyChanges.afterCommit(change);
  return { changed: change.tokenIds.length, processed };
}

/** Records that a rotation's grace period has started and when it ends. */
export async function startGrace(db: Pool, batchId: number, endsAtMs: number): Promise<void> {
  await db.query(
    `UPDATE key_batches SET phase = 'grace', grace_ends_at = to_timestamp($2 / 1000.0) WHERE id = $1 AND status = 'running'`,
    [batchId, endsAtMs],
  );
}

/** Keys a batch must have written for its end to tidy the table (smaller ones are autovacuum's). */
export const TIDY_AFTER_KEYS = 10_000;

/** An issue batch that wrote a chunk this recently is still writing, and will tidy when it ends. */
const WRITING_WITHIN_SECONDS = 15;

/**
 * Leaves the keys table ready for the list right after a large batch: until a VACUUM has set the visibility map,
 * a deep page or a count reads the heap page by page (hundreds of milliseconds at a million keys), the planner has
 * no statistics for the new rows, and the name index's pending entries are unmerged. The batch says `tidying`
 * meanwhile (still running: its keys are all there).
 *
 * Batches sent together end together, and each VACUUM (ANALYZE) of a million keys costs a few hundred milliseconds
 * on the one connection the chunks share: a batch that ends while another large issue batch is still writing (it
 * wrote a chunk in the last WRITING_WITHIN_SECONDS) leaves the tidying to that one. Its `tidying` is written before
 * it looks, so of batches ending at once the last to look sees the others tidying and runs the VACUUM; a batch that
 * stopped writing (its worker gone) is not waited for.
 */
export async function tidyAfterBatch(db: Pool, batchId: number): Promise<boolean> {
  const res = await db.query<{ created: number }>(
    `UPDATE key_batches SET phase = 'tidying' WHERE id = $1 AND status = 'running' AND kind IN ('issue', 'rotate') RETURNING created`,
    [batchId],
  );
  if ((res.rows[0]?.created ?? 0) < TIDY_AFTER_KEYS) return false;
  const writing = await db.query(
    `SELECT 1 FROM key_batches
      WHERE status = 'running' AND kind = 'issue' AND id <> $1 AND requested >= $2 AND phase = 'issuing'
        AND progressed_at > now() - make_interval(secs => $3)
      LIMIT 1`,
    [batchId, TIDY_AFTER_KEYS, WRITING_WITHIN_SECONDS],
  );
  if (writing.rowCount) return false;
  await db.query('VACUUM (ANALYZE) tokens');
  return true;
}

/**
 * Ends a batch: completed, failed or cancelled, with one audit event. Only a running batch changes, so a
 * repeated call (or a cancel racing a completion) keeps the first outcome.
 */
export async function finishBatch(
  db: Pool,
  input: { batchId: number; status: Exclude<BatchStatus, 'running'>; error?: string | null },
): Promise<BatchOutcome> {
  return inTransaction(db, async (tx) => {
    const res = await tx.query<{ account_id: number; kind: string; status: BatchStatus; created: number; changed: number; requested: number; source_batch_id: number | null }>(
      `UPDATE key_batches SET status = $2, error = $3, finished_at = now(),
              phase = CASE WHEN $2 = 'completed' THEN 'done' ELSE phase END
        WHERE id = $1 AND status = 'running'
        RETURNING account_id, kind, status, created, changed, requested, source_batch_id`,
      [input.batchId, input.status, input.error ?? null],
    );
    let row = res.rows[0];
    if (row) {
      await recordAudit(tx, {
        accountId: row.account_id,
        action: `key_batch.${input.status}`,
        targetType: 'key_batch',
        targetId: input.batchId,
        details: {
          kind: row.kind, requested: row.requested, created: row.created, changed: row.changed,
          source_batch_id: row.source_batch_id, ...(input.error ? { error: input.error } : {}),
        },
      });
    } else {
      const cur = await tx.query<typeof row>('SELECT status, created, changed FROM key_batches WHERE id = $1', [input.batchId]);
      row = cur.rows[0];
    }
    return { batchId: input.batchId, status: row?.status ?? input.status, created: row?.created ?? 0, changed: row?.changed ?? 0 };
  });
}
