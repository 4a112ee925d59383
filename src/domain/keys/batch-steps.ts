import { ConflictError, NotFoundError } from '../errors';
import type { Repositories } from '../ports/repositories';
import type { Tx } from '../ports/transactions';
import type { BatchOutcome, BatchStatus, ChunkRange, SourceChunkRange, StatusChunkRange } from './batch-plan';
import type { KeyChangeBus } from './key-change-bus';
import type { KeyCipher } from './key-material';
import type { KeySealer } from './key-sealer';
import { lockRotationSources, moveBudgets, replacementQuota, RotationSource } from './rotation-budget';
import type { TokenSettings } from './token-record';
import { insertKeys, NewKeyRow } from './tokens';

// The steps a bulk-key workflow runs, one transaction each. Every step is idempotent: a retried or
// duplicated call (a worker killed after commit, a timed-out attempt still running) changes nothing
// twice. Key material is generated and stored here and never returned.

/** Largest chunk: one transaction of this many rows stays well under the activity's heartbeat timeout. */
export const MAX_CHUNK_SIZE = 20_000;

/** What the steps read and write: keys, key batches and the audit log, in transactions. */
export type KeyStepRepositories = Pick<Repositories, 'keys' | 'keyBatches' | 'audit' | 'transactions'>;

async function runningBatch(repos: KeyStepRepositories, tx: Tx, batchId: number) {
  const batch = await repos.keyBatches.step(batchId, tx);
  if (!batch) throw new NotFoundError(`batch ${batchId} not found`, 'id');
  // A finished batch never gets more work, even from a late duplicate activity attempt.
  if (batch.status !== 'running') throw new ConflictError(`batch ${batchId} is ${batch.status}`);
  return batch;
}

/**
 * Creates the keys `from..to` of an issue batch; rows that exist already are skipped. The key material is made
 * before the transaction opens (on the sealer's threads in a worker), so a connection is held only for the insert.
 */
export async function issueKeyChunk(repos: KeyStepRepositories, sealer: KeySealer, r: ChunkRange): Promise<{ inserted: number; created: number }> {
  const blob = await sealer.seal(Math.max(0, r.to - r.from + 1));
  return repos.transactions.run(async (tx) => {
    const batch = await runningBatch(repos, tx, r.batchId);
    const p = batch.params as unknown as TokenSettings;
    const inserted = await repos.keys.insertRange(blob, { userId: batch.account_id, settings: p, namePrefix: p.name, batchId: r.batchId, from: r.from, to: r.to }, tx);
    const created = await repos.keyBatches.addCreated(r.batchId, inserted, { progressed: true }, tx);
    return { inserted, created };
  });
}

/**
 * Issues one replacement per key of the source batch with batch_index `from..to` (same name, quota
 * settings, group, models, expiry and status; batch_index kept), into the rotation batch. A limited key's
 * balance moves to its replacement, which the old key then spends too (rotation-budget.ts).
 */
export async function rotateKeyChunk(repos: KeyStepRepositories, cipher: KeyCipher, r: SourceChunkRange): Promise<{ inserted: number; created: number }> {
  return repos.transactions.run(async (tx) => {
    const batch = await runningBatch(repos, tx, r.batchId);
    const src = await lockRotationSources(repos.keys, tx, { ...r, accountId: batch.account_id });
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
    const enabled = await insertKeys(repos.keys, cipher, src.filter((s) => s.status === 1).map(toRow), tx);
    // A disabled key is replaced by a disabled key: rotation never re-opens access.
    const disabled = await insertKeys(repos.keys, cipher, src.filter((s) => s.status !== 1).map(toRow), tx);
    await repos.keys.setStatusOf(disabled, 2, tx);
    await moveBudgets(repos.keys, tx, r.batchId, src, [...enabled, ...disabled]);
    const inserted = enabled.length + disabled.length;
    const created = await repos.keyBatches.addCreated(r.batchId, inserted, { progressed: false }, tx);
    return { inserted, created };
  });
}

/**
 * Sets the status of the source batch's keys with batch_index `from..to`. The changed keys are announced
 * on the key-change bus in one publish inside the transaction and one afterCommit of its receipt after
 * commit, so no replica keeps serving them.
 */
export async function setKeyStatusChunk(
  repos: KeyStepRepositories,
  keyChanges: KeyChangeBus,
  r: StatusChunkRange,
): Promise<{ changed: number; processed: number }> {
  const { change, processed } = await repos.transactions.run(async (tx) => {
    const batch = await runningBatch(repos, tx, r.batchId);
    const changedIds = await repos.keys.setBatchRangeStatus({ batchId: r.sourceBatchId, accountId: batch.account_id, from: r.from, to: r.to, status: r.status }, tx);
    const change = await keyChanges.publish(tx, changedIds);
    // processed = source keys up to `to`, counted from where the last chunk stopped: a retried chunk adds nothing,
    // and no chunk counts the keys before it again.
    const processed = await repos.keyBatches.addStatusChunk({ batchId: r.batchId, changed: changedIds.length, sourceBatchId: r.sourceBatchId, phase: r.phase, to: r.to }, tx);
    return { change, processed };
  });
  await keyChanges.afterCommit(change);
  return { changed: change.tokenIds.length, processed };
}

/** Records that a rotation's grace period has started and when it ends. */
export async function startGrace(repos: Pick<Repositories, 'keyBatches'>, batchId: number, endsAtMs: number): Promise<void> {
  await repos.keyBatches.startGrace(batchId, endsAtMs);
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
export async function tidyAfterBatch(repos: Pick<Repositories, 'keyBatches'>, batchId: number): Promise<boolean> {
  const created = await repos.keyBatches.markTidying(batchId);
  if ((created ?? 0) < TIDY_AFTER_KEYS) return false;
  if (await repos.keyBatches.otherLargeIssueWriting(batchId, TIDY_AFTER_KEYS, WRITING_WITHIN_SECONDS)) return false;
  await repos.keyBatches.tidyKeys();
  return true;
}

/**
 * Ends a batch: completed, failed or cancelled, with one audit event. Only a running batch changes, so a
 * repeated call (or a cancel racing a completion) keeps the first outcome.
 */
export async function finishBatch(
  repos: Pick<Repositories, 'keyBatches' | 'audit' | 'transactions'>,
  input: { batchId: number; status: Exclude<BatchStatus, 'running'>; error?: string | null },
): Promise<BatchOutcome> {
  return repos.transactions.run(async (tx) => {
    const row = await repos.keyBatches.finish(input.batchId, input.status, input.error ?? null, tx);
    if (row) {
      await repos.audit.record({
        accountId: row.account_id,
        action: `key_batch.${input.status}`,
        targetType: 'key_batch',
        targetId: input.batchId,
        details: {
          kind: row.kind, requested: row.requested, created: row.created, changed: row.changed,
          source_batch_id: row.source_batch_id, ...(input.error ? { error: input.error } : {}),
        },
      }, tx);
    }
    const end = row ?? (await repos.keyBatches.counts(input.batchId, tx));
    return { batchId: input.batchId, status: end?.status ?? input.status, created: end?.created ?? 0, changed: end?.changed ?? 0 };
  });
}
