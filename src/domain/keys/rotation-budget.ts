import { ConflictError } from '../errors';
import type { KeyRepository, RotationSource } from '../ports/keys';
import type { Tx } from '../ports/transactions';
import type { TokenSettings } from './token-record';

export type { RotationSource };

// A rotation moves a limited key's budget to its replacement instead of copying it: the old key stays
// enabled through the grace period, and two copies of one balance would let the pair spend it twice.
// After the move the replacement holds the balance, the old key's remain_quota is 0 and its
// quota_owner_id names the replacement, so reserve (src/domain/billing/holds.ts) debits the replacement's row for
// either key. Keys that already shared the old key's budget (an earlier rotation) follow it too, so an
// owner never has an owner itself.

/**
 * Locks and reads the source keys with batch_index `from..to` and the keys whose balance they spend. Lock
 * order, as in billing/holds.ts: budget rows (keys without an owner) first, then the keys drawing on them.
 */
export async function lockRotationSources(
  keys: KeyRepository,
  tx: Tx,
  r: { sourceBatchId: number; accountId: number; from: number; to: number },
): Promise<RotationSource[]> {
  const { locked, sources } = await keys.lockRotationSources(r, tx);
  // Another rotation moved one of these budgets between our read and our locks: the activity retries.
  for (const s of sources) {
    if (!locked.has(s.id) || !locked.has(s.budget_id) || s.budget_owner !== null) {
      throw new Error(`the budget of key ${s.id} moved while the rotation chunk ran; retrying`);
    }
  }
  return sources;
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
export async function moveBudgets(keys: KeyRepository, tx: Tx, rotationBatchId: number, sources: RotationSource[], insertedIds: number[]): Promise<void> {
  if (insertedIds.length === 0) return;
  const byIndex = await keys.idsByIndex(rotationBatchId, insertedIds, tx);
  const moves: Array<{ budget: number; replacement: number }> = [];
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
    moves.push({ budget: s.budget_id, replacement });
  }
  await keys.moveBudgets(moves, tx);
}
