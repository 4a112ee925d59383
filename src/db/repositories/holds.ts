import type { Pool } from 'pg';
import type { Hold } from '../../domain/billing/holds';
import { encodeEntry, type ReleaseRow, type ReserveRow, type SettleRow } from '../../domain/billing/operations';
import type { HoldRepository } from '../../domain/ports/billing';
import { on } from './queryable';

interface HoldRow {
  id: number;
  business_key: string;
  account_id: number;
  token_id: number | null;
  budget_token_id: number | null;
  amount: number;
  reason: string;
  created_at: Date;
  expires_at: Date;
}

const HOLD_COLUMNS = 'id, business_key, account_id, token_id, budget_token_id, amount, reason, created_at, expires_at';

function toHold(r: HoldRow): Hold {
  return {
    id: r.id,
    businessKey: r.business_key,
    accountId: r.account_id,
    tokenId: r.token_id,
    budgetTokenId: r.budget_token_id ?? r.token_id,
    amount: r.amount,
    reason: r.reason,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  };
}

export function createHoldRepository(db: Pool): HoldRepository {
  return {
    async reserve(input, tx) {
      const res = await on(db, tx).query<ReserveRow>('SELECT * FROM billing_reserve($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
        input.businessKey,
        input.accountId,
        input.tokenId,
        input.amount,
        input.reason,
        input.ttlSeconds,
        input.asyncCommit === true,
        input.period?.quota ?? 0,
        input.period?.start ?? null,
      ]);
      return res.rows[0];
    },

    async settle(businessKey, input, tx) {
      const res = await on(db, tx).query<SettleRow>('SELECT * FROM billing_settle($1, $2, $3, $4::jsonb, $5)', [
        businessKey,
        input.actualAmount,
        input.chargeExcess === true,
        JSON.stringify(encodeEntry(input)),
        input.asyncCommit === true,
      ]);
      return res.rows[0];
    },

    async release(businessKey, opts = {}, tx) {
      const res = await on(db, tx).query<ReleaseRow>('SELECT * FROM billing_release($1, $2)', [businessKey, opts.asyncCommit === true]);
      return res.rows[0];
    },

    async get(businessKey, tx) {
      const res = await on(db, tx).query<HoldRow>(`SELECT ${HOLD_COLUMNS} FROM quota_holds WHERE business_key = $1`, [businessKey]);
      return res.rows[0] ? toHold(res.rows[0]) : null;
    },

    async runBatch(ops) {
      // A named statement: each connection parses and plans it once, not on every batch.
      const res = await db.query<{ r: unknown[] }>({ name: 'billing_batch', text: 'SELECT billing_batch($1::jsonb) AS r', values: [`[${ops.join(',')}]`] });
      return res.rows[0].r;
    },

    async expired(limit) {
      const res = await db.query<{ business_key: string }>('SELECT business_key FROM quota_holds WHERE expires_at <= now() ORDER BY expires_at LIMIT $1', [limit]);
      return res.rows.map((r) => r.business_key);
    },
  };
}
