import type { PoolClient } from 'pg';
import { ConflictError } from '../errors';
import type { TokenSettings } from './token-record';

// A rotation moves a limited key's budget to its replacement instead of copying it: the old key stays
// enabled through the grace period, and two copies of one balance would let the pair spend it twice.
// After the move the replacement holds the balance, the old key's remain_quota is 0 and its
// quota_owner_id names the replacement, so reserve (src/domain/billing/holds.ts) debits the replacement's row for
// either key. Keys that already shared the old key's budget (an earlier rotation) follow it too, so an
// owner never has an owner itself.

export interface RotationSource extends TokenSettings {
  id: number;
  user_id: number;
  status: number;
  batch_index: number;
  /** The key whose remain_quota this key spends: itself, or its owner. */
  budget_id: number;
  budget_remain: number;
  budget_unlimited: boolean;
}

/**
 * Locks and reads the source keys with batch_index `from..to` and the keys whose balance they spend. Lock
 * order, as in billing/holds.ts: budget rows (keys without an owner) first, then the keys drawing on them.
 */
export async function lockRotationSources(
  tx: PoolClient,
  r: { sourceBatchId: number; accountId: number; from: number; to: number },
): Promise<RotationSource[]> {
  const args = [r.sourceBatchId, r.accountId, r.from, r.to];
  const locked = await tx.query<{ id: number }>(
    `WITH src AS (
       SELECT id, COALESCE(quota_owner_id, id) AS budget FROM tokens
        WHERE batch_id = $1 AND user_id = $2 AND batch_index BETWEEN $3 AND $4)
     SELECT id FROM tokens WHERE id IN (SELECT budget FROM src UNION SELECT id FROM src)
     ORDER BY quota_owner_id IS NOT NULL, id
     FOR NO KEY UPDATE`,
    args,
  );
  const res = await tx.query<RotationSource & { budget_owner: number | null }>(
    `SELECT s.id, s.user_id, s.name, s."group", s.models, s.remain_quota, s.unlimited_quota, s.expired_time, s.status,
            s.batch_index, b.id AS budget_id, b.remain_quota AS budget_remain, b.unlimited_quota AS budget_unlimited,
            b.quota_owner_id AS budget_owner
       FROM tokens s JOIN tokens b ON b.id = COALESCE(s.quota_owner_id, s.id)
      WHERE s.batch_id = $1 AND s.user_id = $2 AND s.batch_index BETWEEN $3 AND $4
      ORDER BY s.batch_index`,
    args,
  );
  // Another rotation moved one of these budgets between our read and our locks: the activity retries.
  const lockedIds = new Set(locked.rows.map((row) => row.id));
  for (const s of res.rows) {
    if (!lockedIds.has(s.id) || !lockedIds.has(s.budget_id) || s.budget_owner !== null) {
      throw new Error(`the budget of key ${s.id} moved while the rotation chunk ran; retrying`);
    }
  }
  return res.rows;
}

/** The settings of the replacement: a limited key's replacement takes over the balance it spends. */
export function replacementQuota(s: RotationSource): Pick<TokenSettings, 'remain_quota' | 'unlimited_quota'> {
  if (s.unlimited_quota) return { remain_quota: s.remain_quota, unlimited_quota: true };
  return { remain_quota: s.budget_remain, unlimited_quota: s.budget_unlimited };
}

/**
 * Moves the budgets of the limited source keys whose replacements this call inserted (ids in
 * `insertedIds`, in the rotation batch, keyed by batch_index): the budget row's remain_quota becomes 0 and
 * it, and every key drawing on it, now draws on the replacement. Runs in the chunk's transaction, after
 * lockRotationSources, so the balance copied into the replacement is the one zeroed here.
 */
export async function moveBudgets(
  tx: PoolClient,
  rotationBatchId: number,
  sources: RotationSource[],
  insertedIds: number[],
): Promise<void> {
  if (insertedIds.length === 0) return;
  const fresh = await tx.query<{ id: number; batch_index: number }>(
    'SELECT id, batch_index FROM tokens WHERE batch_id = $1 AND id = ANY($2::bigint[])',
    [rotationBatchId, insertedIds],
  );
  const byIndex = new Map(fresh.rows.map((row) => [row.batch_index, row.id]));
  const budgets: number[] = [];
  const replacements: number[] = [];
  const seen = new Map<number, number>();
  for (const s of sources) {
    const replacement = byIndex.get(s.batch_index);
    if (s.unlimited_quota || replacement === undefined) continue;
    const other = seen.get(s.budget_id);
    if (other !== undefined) {
      // Cannot happen through the API (keys share a budget only with keys of the same batch_index in other
      // batches); moving one balance to two replacements would double it, so refuse.
      throw new ConflictError(`keys ${other} and ${s.id} of the source batch spend one budget; rotate them separately`);
    }
    seen.set(s.budget_id, s.id);
    budgets.push(s.budget_id);
    replacements.push(replacement);
  }
  if (budgets.length === 0) return;
  await tx.query(
    `UPDATE tokens t SET quota_owner_id = m.replacement,
            remain_quota = CASE WHEN t.id = m.budget THEN 0 ELSE t.remain_quota END
       FROM unnest($1::bigint[], $2::bigint[]) AS m(budget, replacement)
      WHERE t.id = m.budget OR t.quota_owner_id = m.budget`,
    [budgets, replacements],
  );
}
