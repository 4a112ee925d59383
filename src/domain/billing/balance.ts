import { InvalidApiKeyError } from '../errors';
import type { KeyRepository } from '../ports/keys';

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
export async function getKeyBalance(keys: Pick<KeyRepository, 'balance'>, tokenId: number): Promise<KeyBalance> {
  const row = await keys.balance(tokenId);
  if (!row) throw new InvalidApiKeyError();
  return {
    limitUsd: row.unlimited_quota ? UNLIMITED_USD : (row.remain_quota + row.used_quota + row.held) / CREDITS_PER_USD,
    usedUsd: row.used_quota / CREDITS_PER_USD,
    accessUntil: row.expired_time === -1 ? 0 : row.expired_time,
  };
}
