import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../../db/pool';
import { ConflictError, InvalidApiKeyError, QuotaExhaustedError, UnavailableError, ValidationError } from '../errors';
import { type Db, insertLedgerEntry, isBilled } from './ledger';

/**
 * Quota holds: money is reserved before an upstream call and either settled into the ledger (ledger.ts) or
 * released. Rules (see docs/decisions.md):
 * - A key spends its budget: the remain_quota of `COALESCE(quota_owner_id, id)`. A rotation points the old
 *   key (enabled through the grace period) at its replacement, so both spend one balance. An owner never
 *   has an owner itself ("root"); deleting the owner makes the key fall back to its own balance.
 * - reserve: one transaction = hold insert (recording the budget key) + conditional debit of the budget's
 *   remain_quota (unless it is unlimited) + conditional debit of the account wallet (when it has one). The
 *   calling key itself must be usable (enabled, not expired), checked under its row lock. Any debit that
 *   does not match means insufficient quota: everything rolls back and nothing is written.
 * - remain_quota falls at reserve time; used_quota (calling key and account) rises only at settle.
 * - settle: one transaction = delete the hold + ledger row + refund (reserved - actual) to the budget +
 *   used += actual on the calling key.
 * - release: one transaction = delete the hold + refund the whole amount to the budget. No ledger row.
 * - A refund goes to the current budget of the key the hold was debited from: when a rotation moved that
 *   budget on meanwhile, it follows it; when that key was deleted, its money went with it.
 * - Every step is idempotent by the hold's business key; the ledger's unique request_id / task_id is a
 *   second guard against billing one call twice.
 * Lock order everywhere: hold row, then the budget key row, then the calling key row when it is another
 * one, then the account row. Budget before caller is the order a key delete takes too (the deleted owner,
 * then, by ON DELETE SET NULL, the keys it paid for), and the order a rotation locks in.
 * Budget rows are written only with `quota_owner_id IS NULL` in the WHERE clause: when a rotation moved the
 * budget between our read and our lock, nothing is written and the whole operation runs again (BudgetMoved).
 */

export interface Hold {
  id: number;
  businessKey: string;
  accountId: number;
  tokenId: number | null;
  /** The key whose remain_quota paid for the hold (the calling key, or the key its budget belongs to). */
  budgetTokenId: number | null;
  amount: number;
  reason: string;
  createdAt: Date;
  expiresAt: Date;
}

export interface ReserveInput {
  /** Unique per billable operation, e.g. `req:<request id>` or `task:<task id>`. */
  businessKey: string;
  tokenId: number | null;
  accountId: number;
  /** Credits; a whole number >= 0. */
  amount: number;
  reason: string;
  /** After this the sweeper gives the amount back; must outlive the operation (video: > task deadline). */
  ttlSeconds: number;
}

export interface SettleInput {
  /** Credits actually billed; at most the reserved amount. */
  actualAmount: number;
  requestId: string;
  taskId?: string | null;
  model: string;
  tokenName?: string;
  channelId?: number | null;
  promptTokens?: number;
  completionTokens?: number;
  units?: number;
  latencyMs?: number;
}

export type SettleResult =
  | { status: 'settled'; ledgerId: number; billed: number; refunded: number }
  /** No hold under this key, and the ledger already has this call: an earlier settle did the work. */
  | { status: 'already_settled' }
  /** A ledger row for this request/task existed already: the hold was released instead of billing twice. */
  | { status: 'duplicate'; refunded: number }
  /** No hold and no ledger row: it was released (or swept) before; nothing billed. */
  | { status: 'not_found' };

export type ReleaseResult = { status: 'released'; refunded: number } | { status: 'not_found' };

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

function assertCredits(value: number, field: string): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new ValidationError(`${field} must be a whole number >= 0`, field);
}

/** Thrown inside a reserve transaction to roll it back when another reserve with the same key won. */
class ExistingHold extends Error {}

/**
 * Thrown inside a transaction when a key's budget moved (a rotation committed) between reading which row
 * pays and writing it. The transaction (or savepoint) is rolled back, which also drops any row lock taken
 * on the way, and the operation runs again from the start.
 */
class BudgetMoved extends Error {}

const MAX_BUDGET_ATTEMPTS = 5;

async function retryOnBudgetMove<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof BudgetMoved)) throw err;
      if (attempt >= MAX_BUDGET_ATTEMPTS) {
        throw new UnavailableError('the key\'s budget is being moved by a key rotation; try again');
      }
    }
  }
}

/**
 * A transaction on a pool, or a savepoint inside the caller's transaction when given a checked-out client
 * (so a failed reserve never leaves half its writes in the caller's transaction).
 */
async function withTx<T>(db: Db, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  if (!('release' in db)) return inTransaction(db, fn);
  await db.query('SAVEPOINT quota_op');
  try {
    const result = await fn(db);
    await db.query('RELEASE SAVEPOINT quota_op');
    return result;
  } catch (err) {
    await db.query('ROLLBACK TO SAVEPOINT quota_op').catch(() => undefined);
    throw err;
  }
}

/** Enabled and not expired, as key authentication decides it (`t` names the tokens row). */
const usableKey = (t: string) =>
  `${t}.status = 1 AND (${t}.expired_time = -1 OR ${t}.expired_time > extract(epoch FROM now()))`;

/**
 * Debits the hold's budget key (`budgetId`, read when the hold was inserted) for the calling key. Unlimited
 * budgets are debited too (remain_quota may go below 0 there), so a refund is always the mirror of the debit
 * even if the unlimited flag changes while the hold is open. The calling key's status and expiry are
 * checked in its row lock, so a key disabled after the caller authenticated it (from a replica's cache) can
 * never be charged.
 */
async function debitBudget(tx: PoolClient, input: ReserveInput, budgetId: number | null, need: number): Promise<void> {
  const caller = input.tokenId!;
  if (budgetId === caller) {
    // The key pays for itself (every key that was never rotated): one conditional update.
    const res = await tx.query(
      `UPDATE tokens t SET remain_quota = remain_quota - $3
       WHERE id = $1 AND user_id = $2 AND quota_owner_id IS NULL AND ${usableKey('t')}
         AND (unlimited_quota OR remain_quota >= $4)`,
      [caller, input.accountId, input.amount, need],
    );
    if (res.rowCount === 1) return;
  } else if (budgetId !== null) {
    // Another key pays: its row first, then the caller's (the lock order).
    const res = await tx.query(
      `UPDATE tokens SET remain_quota = remain_quota - $2
       WHERE id = $1 AND quota_owner_id IS NULL AND (unlimited_quota OR remain_quota >= $3)`,
      [budgetId, input.amount, need],
    );
    if (res.rowCount === 1) {
      const c = await tx.query<{ budget: number; usable: boolean }>(
        `SELECT COALESCE(quota_owner_id, id) AS budget, ${usableKey('t')} AS usable
         FROM tokens t WHERE id = $1 AND user_id = $2 FOR NO KEY UPDATE`,
        [caller, input.accountId],
      );
      const row = c.rows[0];
      if (!row || !row.usable) throw new InvalidApiKeyError();
      if (row.budget !== budgetId) throw new BudgetMoved();
      return;
    }
  }
  // Nothing was debited: find out why (the key, its budget having moved, or the money).
  const why = await tx.query<{ budget: number; usable: boolean; budget_is_root: boolean }>(
    `SELECT COALESCE(t.quota_owner_id, t.id) AS budget, ${usableKey('t')} AS usable,
       (b.id IS NOT NULL AND b.quota_owner_id IS NULL) AS budget_is_root
     FROM tokens t LEFT JOIN tokens b ON b.id = COALESCE(t.quota_owner_id, t.id)
     WHERE t.id = $1 AND t.user_id = $2`,
    [caller, input.accountId],
  );
  const row = why.rows[0];
  if (!row || !row.usable) throw new InvalidApiKeyError();
  if (row.budget !== budgetId || !row.budget_is_root) throw new BudgetMoved();
  throw new QuotaExhaustedError();
}

/**
 * Reserves `amount` credits. Returns the hold (an existing one when this business key was reserved
 * before: no second debit). Throws QuotaExhaustedError (429 insufficient_quota) when the key's budget or
 * the account cannot cover it; a limited budget or wallet at 0 cannot reserve even a zero amount.
 */
export async function reserve(db: Db, input: ReserveInput): Promise<Hold & { created: boolean }> {
  assertCredits(input.amount, 'amount');
  if (!(input.ttlSeconds > 0)) throw new ValidationError('ttlSeconds must be > 0', 'ttlSeconds');
  const need = Math.max(input.amount, 1);
  try {
    return await retryOnBudgetMove(() => withTx(db, async (tx) => {
      // The budget is read (unlocked) with the insert; debitBudget writes it only if it is still the budget.
      const inserted = await tx.query<HoldRow>(
        `INSERT INTO quota_holds (business_key, account_id, token_id, budget_token_id, amount, reason, expires_at)
         VALUES ($1, $2, $3, (SELECT COALESCE(quota_owner_id, id) FROM tokens WHERE id = $3), $4, $5,
           now() + make_interval(secs => $6))
         ON CONFLICT (business_key) DO NOTHING RETURNING ${HOLD_COLUMNS}`,
        [input.businessKey, input.accountId, input.tokenId, input.amount, input.reason, input.ttlSeconds],
      );
      if (inserted.rowCount === 0) throw new ExistingHold();

      if (input.tokenId !== null) await debitBudget(tx, input, inserted.rows[0].budget_token_id, need);
      const account = await tx.query(
        `UPDATE accounts SET quota = quota - $2 WHERE id = $1 AND (quota IS NULL OR quota >= $3)`,
        [input.accountId, input.amount, need],
      );
      if (account.rowCount === 0) {
        const exists = await tx.query('SELECT 1 FROM accounts WHERE id = $1', [input.accountId]);
        if (exists.rowCount === 0) throw new InvalidApiKeyError();
        throw new QuotaExhaustedError('You exceeded your current quota: the account balance is insufficient');
      }
      return { ...toHold(inserted.rows[0]), created: true };
    }));
  } catch (err) {
    if (!(err instanceof ExistingHold)) throw err;
    const existing = await getHold(db, input.businessKey);
    // Settled or released between our insert attempt and this read: the key was used up.
    if (!existing) throw new ConflictError(`hold ${input.businessKey} was already finalized`, 'businessKey');
    if (existing.accountId !== input.accountId || existing.tokenId !== input.tokenId || existing.amount !== input.amount) {
      throw new ConflictError(`hold ${input.businessKey} exists with different parameters`, 'businessKey');
    }
    return { ...existing, created: false };
  }
}

export async function getHold(db: Db, businessKey: string): Promise<Hold | null> {
  const res = await db.query<HoldRow>(`SELECT ${HOLD_COLUMNS} FROM quota_holds WHERE business_key = $1`, [businessKey]);
  return res.rows[0] ? toHold(res.rows[0]) : null;
}

/**
 * Gives `amount` back to the current budget of `budgetKey` (the key a hold was debited from): that key, or
 * its owner when a rotation has moved its budget on since. Nothing when that key was deleted (its balance
 * went with it). Throws BudgetMoved when a rotation moves it while we wait for the row.
 */
async function refundBudget(tx: PoolClient, budgetKey: number, amount: number): Promise<void> {
  const res = await tx.query(
    `UPDATE tokens SET remain_quota = remain_quota + $2
     WHERE id = (SELECT COALESCE(quota_owner_id, id) FROM tokens WHERE id = $1) AND quota_owner_id IS NULL`,
    [budgetKey, amount],
  );
  if (res.rowCount === 1) return;
  const exists = await tx.query('SELECT 1 FROM tokens WHERE id = $1', [budgetKey]);
  if (exists.rowCount === 0) return;
  throw new BudgetMoved();
}

/** Gives `refund` back to the hold's budget and (settle only) adds `used` to the calling key and account. */
async function applyRefund(tx: PoolClient, hold: HoldRow, refund: number, used: number): Promise<void> {
  // Holds taken before budgets existed (migration 003) have no budget_token_id: their key paid.
  const budgetKey = hold.budget_token_id ?? hold.token_id;
  if (budgetKey !== null && refund !== 0) await refundBudget(tx, budgetKey, refund);
  if (hold.token_id !== null && used !== 0) {
    await tx.query('UPDATE tokens SET used_quota = used_quota + $2 WHERE id = $1', [hold.token_id, used]);
  }
  if (refund !== 0 || used !== 0) {
    // A NULL wallet stays NULL (NULL + x is NULL): it was not debited either.
    await tx.query('UPDATE accounts SET quota = quota + $2, used_quota = used_quota + $3 WHERE id = $1', [
      hold.account_id,
      refund,
      used,
    ]);
  }
}

/**
 * Bills `actualAmount` of the hold: ledger row, refund of the rest and removal of the hold, in one
 * transaction. Safe to repeat (activity retries): only the first call bills.
 */
export async function settle(db: Db, businessKey: string, input: SettleInput): Promise<SettleResult> {
  assertCredits(input.actualAmount, 'actualAmount');
  const result = await retryOnBudgetMove(() => withTx(db, async (tx): Promise<SettleResult | null> => {
    const deleted = await tx.query<HoldRow>(`DELETE FROM quota_holds WHERE business_key = $1 RETURNING ${HOLD_COLUMNS}`, [
      businessKey,
    ]);
    const hold = deleted.rows[0];
    if (!hold) return null;
    if (input.actualAmount > hold.amount) {
      throw new ValidationError(
        `actualAmount ${input.actualAmount} exceeds the reserved ${hold.amount} of hold ${businessKey}`,
        'actualAmount',
      );
    }
    const ledgerId = await insertLedgerEntry(tx, {
      requestId: input.requestId,
      taskId: input.taskId ?? null,
      accountId: hold.account_id,
      tokenId: hold.token_id,
      tokenName: input.tokenName ?? '',
      model: input.model,
      channelId: input.channelId ?? null,
      promptTokens: input.promptTokens ?? 0,
      completionTokens: input.completionTokens ?? 0,
      units: input.units ?? 0,
      quota: input.actualAmount,
      latencyMs: input.latencyMs ?? 0,
    });
    if (ledgerId === null) {
      // This call is billed already (another hold for the same request/task): give this one back whole.
      await applyRefund(tx, hold, hold.amount, 0);
      return { status: 'duplicate', refunded: hold.amount };
    }
    const refund = hold.amount - input.actualAmount;
    await applyRefund(tx, hold, refund, input.actualAmount);
    return { status: 'settled', ledgerId, billed: input.actualAmount, refunded: refund };
  }));
  if (result) return result;
  return (await isBilled(db, input.requestId, input.taskId ?? null))
    ? { status: 'already_settled' }
    : { status: 'not_found' };
}

/** Gives the whole hold back without billing (failed call, cancelled task). Safe to repeat. */
export async function release(db: Db, businessKey: string): Promise<ReleaseResult> {
  return retryOnBudgetMove(() => withTx(db, async (tx) => {
    const deleted = await tx.query<HoldRow>(`DELETE FROM quota_holds WHERE business_key = $1 RETURNING ${HOLD_COLUMNS}`, [
      businessKey,
    ]);
    const hold = deleted.rows[0];
    if (!hold) return { status: 'not_found' } as const;
    await applyRefund(tx, hold, hold.amount, 0);
    return { status: 'released', refunded: hold.amount } as const;
  }));
}

/**
 * Releases holds whose expiry passed (an api replica died mid-call, a workflow never finished), in batches
 * of `batchSize`; concurrent sweepers skip each other's rows. Returns how many holds it released.
 */
export async function sweepExpiredHolds(db: Pool, opts: { batchSize?: number; maxBatches?: number } = {}): Promise<number> {
  const batchSize = opts.batchSize ?? 500;
  const maxBatches = opts.maxBatches ?? 100;
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const n = await retryOnBudgetMove(() => inTransaction(db, async (tx) => {
      const res = await tx.query<HoldRow>(
        `DELETE FROM quota_holds WHERE id IN (
           SELECT id FROM quota_holds WHERE expires_at <= now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING ${HOLD_COLUMNS}`,
        [batchSize],
      );
      const byBudgetKey = new Map<number, number>();
      const byAccount = new Map<number, number>();
      for (const h of res.rows) {
        const budgetKey = h.budget_token_id ?? h.token_id;
        if (budgetKey !== null) byBudgetKey.set(budgetKey, (byBudgetKey.get(budgetKey) ?? 0) + h.amount);
        byAccount.set(h.account_id, (byAccount.get(h.account_id) ?? 0) + h.amount);
      }
      // Each key's current budget (a rotation may have moved it on); deleted keys took their balance along.
      const byBudget = new Map<number, number>();
      if (byBudgetKey.size > 0) {
        const roots = await tx.query<{ id: number; root: number }>(
          'SELECT id, COALESCE(quota_owner_id, id) AS root FROM tokens WHERE id = ANY($1::bigint[])',
          [[...byBudgetKey.keys()]],
        );
        for (const r of roots.rows) byBudget.set(r.root, (byBudget.get(r.root) ?? 0) + byBudgetKey.get(r.id)!);
      }
      // Ascending ids: the sweeper locks only budget rows (no caller rows), so any fixed order is safe.
      for (const [id, amount] of [...byBudget].sort((a, b) => a[0] - b[0])) {
        const upd = await tx.query('UPDATE tokens SET remain_quota = remain_quota + $2 WHERE id = $1 AND quota_owner_id IS NULL', [
          id,
          amount,
        ]);
        if (upd.rowCount === 0) throw new BudgetMoved();
      }
      for (const [id, amount] of [...byAccount].sort((a, b) => a[0] - b[0])) {
        await tx.query('UPDATE accounts SET quota = quota + $2 WHERE id = $1', [id, amount]);
      }
      return res.rowCount ?? 0;
    }));
    total += n;
    if (n < batchSize) break;
  }
  return total;
}

/** Runs sweepExpiredHolds every `intervalMs` until stopped; errors are reported and retried next tick. */
export function startHoldSweeper(
  db: Pool,
  opts: { intervalMs?: number; onError?: (err: unknown) => void; onSwept?: (n: number) => void } = {},
): { stop(): Promise<void> } {
  const intervalMs = opts.intervalMs ?? 30_000;
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (running) return;
    running = sweepExpiredHolds(db)
      .then((n) => {
        if (n > 0) opts.onSwept?.(n);
      })
      .catch((err) => opts.onError?.(err))
      .finally(() => {
        running = null;
      });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
