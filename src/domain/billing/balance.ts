import { InvalidApiKeyError } from '../errors';
import type { Db } from './ledger';

/** 500,000 credits = 1.00 USD (spec). */
export const CREDITS_PER_USD = 500_000;
/** What one-api/new-api report as the limit of an unlimited key. */
export const UNLIMITED_USD = 100_000_000;

export interface KeyBalance {
  /**
   * (remaining of the key's budget + the key's used + the key's open holds) / 500,000, or UNLIMITED_USD when
   * the budget is unlimited. The budget is the key's own, or its replacement's during a rotation's grace.
   */
  limitUsd: number;
  usedUsd: number;
  /** expired_time, or 0 when the key never expires. */
  accessUntil: number;
}

/** The key's balance as the OpenAI-compatible billing endpoints report it, read fresh. */
export async function getKeyBalance(db: Db, tokenId: number): Promise<KeyBalance> {
  const res = await db.query<{ remain_quota: number; used_quota: number; unlimited_quota: boolean; expired_time: number; held: number }>(
    `SELECT COALESCE(b.remain_quota, t.remain_quota) AS remain_quota, t.used_quota,
       COALESCE(b.unlimited_quota, t.unlimited_quota) AS unlimited_quota, t.expired_time,
       (SELECT COALESCE(sum(amount), 0)::bigint FROM quota_holds WHERE token_id = t.id) AS held
     FROM tokens t LEFT JOIN tokens b ON b.id = t.quota_owner_id WHERE t.id = $1`,
    [tokenId],
  );
  const row = res.rows[0];
  if (!row) throw new InvalidApiKeyError();
  return {
    limitUsd: row.unlimited_quota ? UNLIMITED_USD : (row.remain_quota + row.used_quota + row.held) / CREDITS_PER_USD,
    usedUsd: row.used_quota / CREDITS_PER_USD,
    accessUntil: row.expired_time === -1 ? 0 : row.expired_time,
  };
}
