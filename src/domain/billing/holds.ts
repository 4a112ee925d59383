import type { Pool } from 'pg';
import { inTransaction } from '../../db/pool';
import { ConflictError, InvalidApiKeyError, QuotaExhaustedError, UnavailableError, ValidationError } from '../errors';
import type { Db } from './ledger';

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
 *   used += actual on the calling key. With `chargeExcess`, an actual cost above the hold is taken from the
 *   budget and the wallet as far as both can pay (never below zero; unlimited pays in full); the rest is the
 *   ledger row's `shortfall`.
 * - Reserve, settle and release are SQL functions (migration 006), one round trip each; they return a status
 *   instead of raising, so a caller's own transaction is never aborted by a refused reserve.
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
  /** Commit without waiting for the WAL flush (the relay; see docs/decisions.md). */
  asyncCommit?: boolean;
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
  /** Relay columns of the ledger row. */
  isStream?: boolean;
  channel?: string;
  /** Bill an actual amount above the hold, as far as the balances can pay (the relay); otherwise a ValidationError. */
  chargeExcess?: boolean;
  /** Commit without waiting for the WAL flush (the relay; see docs/decisions.md). */
  asyncCommit?: boolean;
}

export type SettleResult =
  /** refunded < 0 when an excess above the hold was charged; shortfall: cost the balances could not pay. */
  | { status: 'settled'; ledgerId: number; billed: number; refunded: number; shortfall: number }
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

/** Raises the error a reserve/settle/release status names; returns normally for the success statuses. */
function raiseFor(status: string, businessKey: string): void {
  switch (status) {
    case 'key':
      throw new InvalidApiKeyError();
    case 'quota':
      throw new QuotaExhaustedError();
    case 'account_quota':
      throw new QuotaExhaustedError('You exceeded your current quota: the account balance is insufficient');
    case 'moved':
      throw new UnavailableError('the key\'s budget is being moved by a key rotation; try again');
    default:
      throw new Error(`unexpected billing status '${status}' for hold ${businessKey}`);
  }
}

/** A row of billing_reserve (migration 006); timestamps are strings when it came through billing_batch's JSON. */
export interface ReserveRow {
  o_status: string;
  o_id: number | null;
  o_budget: number | null;
  o_created: Date | string | null;
  o_expires: Date | string | null;
}

export interface SettleRow {
  o_status: string;
  o_ledger_id: number | null;
  o_billed: number;
  o_refunded: number;
  o_shortfall: number;
  o_held: number | null;
}

export interface ReleaseRow {
  o_status: string;
  o_refunded: number;
}

function checkReserve(input: ReserveInput): void {
  assertCredits(input.amount, 'amount');
  if (!(input.ttlSeconds > 0)) throw new ValidationError('ttlSeconds must be > 0', 'ttlSeconds');
}

/** The outcome of a reserve from its row: the new hold, an existing one for the same parameters, or the error. */
export async function reserveOutcome(db: Db, input: ReserveInput, r: ReserveRow): Promise<Hold & { created: boolean }> {
  if (r.o_status === 'ok') {
    return {
      id: r.o_id as number,
      businessKey: input.businessKey,
      accountId: input.accountId,
      tokenId: input.tokenId,
      budgetTokenId: r.o_budget ?? input.tokenId,
      amount: input.amount,
      reason: input.reason,
      createdAt: new Date(r.o_created as Date | string),
      expiresAt: new Date(r.o_expires as Date | string),
      created: true,
    };
  }
  if (r.o_status !== 'exists') raiseFor(r.o_status, input.businessKey);
  const existing = await getHold(db, input.businessKey);
  // Settled or released between our insert attempt and this read: the key was used up.
  if (!existing) throw new ConflictError(`hold ${input.businessKey} was already finalized`, 'businessKey');
  if (existing.accountId !== input.accountId || existing.tokenId !== input.tokenId || existing.amount !== input.amount) {
    throw new ConflictError(`hold ${input.businessKey} exists with different parameters`, 'businessKey');
  }
  return { ...existing, created: false };
}

/**
 * Reserves `amount` credits. Returns the hold (an existing one when this business key was reserved
 * before: no second debit). Throws QuotaExhaustedError (429 insufficient_quota) when the key's budget or
 * the account cannot cover it; a limited budget or wallet at 0 cannot reserve even a zero amount.
 * One round trip: the SQL function billing_reserve (migration 006) does the whole transaction.
 */
export async function reserve(db: Db, input: ReserveInput): Promise<Hold & { created: boolean }> {
  checkReserve(input);
  const res = await db.query<ReserveRow>('SELECT * FROM billing_reserve($1, $2, $3, $4, $5, $6, $7)', [
    input.businessKey,
    input.accountId,
    input.tokenId,
    input.amount,
    input.reason,
    input.ttlSeconds,
    input.asyncCommit === true,
  ]);
  return reserveOutcome(db, input, res.rows[0]);
}

export async function getHold(db: Db, businessKey: string): Promise<Hold | null> {
  const res = await db.query<HoldRow>(`SELECT ${HOLD_COLUMNS} FROM quota_holds WHERE business_key = $1`, [businessKey]);
  return res.rows[0] ? toHold(res.rows[0]) : null;
}

export function settleOutcome(businessKey: string, input: SettleInput, r: SettleRow): SettleResult {
  switch (r.o_status) {
    case 'settled':
      return { status: 'settled', ledgerId: r.o_ledger_id as number, billed: r.o_billed, refunded: r.o_refunded, shortfall: r.o_shortfall };
    case 'duplicate':
      return { status: 'duplicate', refunded: r.o_refunded };
    case 'already_settled':
    case 'not_found':
      return { status: r.o_status };
    case 'exceeds':
      throw new ValidationError(`actualAmount ${input.actualAmount} exceeds the reserved ${r.o_held} of hold ${businessKey}`, 'actualAmount');
    default:
      return raiseFor(r.o_status, businessKey) as never;
  }
}

/**
 * Bills `actualAmount` of the hold: ledger row, refund of the rest and removal of the hold, in one
 * transaction (one round trip: billing_settle, migration 006). Safe to repeat (activity retries): only the
 * first call bills. An amount above the hold is a ValidationError unless `chargeExcess`: then the excess is
 * taken from the key's budget and the account as far as both can pay and the rest recorded as the ledger
 * row's shortfall.
 */
export async function settle(db: Db, businessKey: string, input: SettleInput): Promise<SettleResult> {
  assertCredits(input.actualAmount, 'actualAmount');
  const res = await db.query<SettleRow>('SELECT * FROM billing_settle($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)', [
    businessKey,
    input.actualAmount,
    input.chargeExcess === true,
    input.requestId,
    input.taskId ?? null,
    input.tokenName ?? '',
    input.model,
    input.channelId ?? null,
    input.promptTokens ?? 0,
    input.completionTokens ?? 0,
    input.units ?? 0,
    Math.max(0, Math.round(input.latencyMs ?? 0)),
    input.isStream === true,
    input.channel ?? '',
    input.asyncCommit === true,
  ]);
  return settleOutcome(businessKey, input, res.rows[0]);
}

export function releaseOutcome(businessKey: string, r: ReleaseRow): ReleaseResult {
  if (r.o_status === 'released') return { status: 'released', refunded: r.o_refunded };
  if (r.o_status === 'not_found') return { status: 'not_found' };
  return raiseFor(r.o_status, businessKey) as never;
}

/** Gives the whole hold back without billing (failed call, cancelled task). Safe to repeat. One round trip. */
export async function release(db: Db, businessKey: string, opts: { asyncCommit?: boolean } = {}): Promise<ReleaseResult> {
  const res = await db.query<ReleaseRow>('SELECT * FROM billing_release($1, $2)', [businessKey, opts.asyncCommit === true]);
  return releaseOutcome(businessKey, res.rows[0]);
}

/** The billing_batch operation of a reserve (checked first). */
function reserveOp(op: 'reserve' | 'video_submit', input: ReserveInput): Record<string, unknown> {
  checkReserve(input);
  return { op, key: input.businessKey, account: input.accountId, token: input.tokenId, amount: input.amount, reason: input.reason, ttl: input.ttlSeconds };
}

/**
 * Group commit for the relay (billing_batch, migration 006): the reserves, settles and releases of concurrent
 * calls go to PostgreSQL together, one statement and one asynchronous commit per batch, so calls on one busy key
 * do not queue on its row lock one commit at a time. A batch is sent as soon as the previous one returned (no
 * timer: a lone call waits for nothing). When a batch fails as a whole (a deadlock with another process, a
 * lost connection), each of its operations runs again alone, so every caller gets its own answer. Every
 * operation keeps the rules and the idempotency of reserve/settle/release above.
 */
export class BillingBatcher {
  private queue: Array<{ op: Record<string, unknown>; resolve: (row: unknown) => void; reject: (err: unknown) => void }> = [];
  /** The longest the queue has been (benchmarks report it). */
  peakQueued = 0;
  private running = false;

  /**
   * At most 48 operations per batch: each runs in a subtransaction, and a transaction with more than 64 of them
   * overflows PostgreSQL's per-backend subtransaction cache, which slows every session's snapshots.
   */
  constructor(private readonly db: Pool, private readonly maxBatch = 48) {}

  async reserve(input: ReserveInput): Promise<Hold & { created: boolean }> {
    const row = (await this.submit(reserveOp('reserve', input))) as ReserveRow;
    return reserveOutcome(this.db, input, row);
  }

  /**
   * A video submit's hold and task row in one operation (`video_submit`, migration 012): the row is inserted only
   * when the hold was taken, and a replayed submit's hold is released there too. Resolves with the insert's result:
   * a created task as its id and created_at, a replayed one whole (migration 014).
   */
  async reserveVideoTask(input: ReserveInput, task: object): Promise<{ status: 'created' | 'replayed'; task: Record<string, unknown> }> {
    const row = (await this.submit({ ...reserveOp('video_submit', input), task })) as ReserveRow & {
      video?: { status: 'created' | 'replayed'; task: Record<string, unknown> };
    };
    await reserveOutcome(this.db, input, row);
    if (!row.video) throw new ConflictError(`hold ${input.businessKey} already exists`, 'businessKey');
    return row.video;
  }

  async settle(businessKey: string, input: SettleInput): Promise<SettleResult> {
    assertCredits(input.actualAmount, 'actualAmount');
    const row = (await this.submit({
      op: 'settle',
      key: businessKey,
      actual: input.actualAmount,
      excess: input.chargeExcess === true,
      request: input.requestId,
      task: input.taskId ?? null,
      token_name: input.tokenName ?? '',
      model: input.model,
      channel_id: input.channelId ?? null,
      prompt: input.promptTokens ?? 0,
      completion: input.completionTokens ?? 0,
      units: input.units ?? 0,
      latency: Math.max(0, Math.round(input.latencyMs ?? 0)),
      stream: input.isStream === true,
      channel: input.channel ?? '',
    })) as SettleRow;
    return settleOutcome(businessKey, input, row);
  }

  async release(businessKey: string): Promise<ReleaseResult> {
    return releaseOutcome(businessKey, (await this.submit({ op: 'release', key: businessKey })) as ReleaseRow);
  }

  /** Operations waiting for a batch. */
  get queued(): number {
    return this.queue.length;
  }

  /** Resolves once nothing is queued or in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running || this.queue.length > 0) await new Promise((r) => setImmediate(r));
  }

  /** Queues one operation of billing_batch (migrations 006, 009) and resolves with its result row. */
  submit(op: Record<string, unknown>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ op, resolve, reject });
      if (this.queue.length > this.peakQueued) this.peakQueued = this.queue.length;
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          const rows = await this.send(batch.map((b) => b.op));
          batch.forEach((b, i) => b.resolve(rows[i]));
        } catch (err) {
          if (batch.length === 1) {
            batch[0].reject(err);
            continue;
          }
          // One at a time: a deadlock between two processes' batches cannot recur with a single operation's locks.
          for (const b of batch) {
            try {
              b.resolve((await this.send([b.op]))[0]);
            } catch (e) {
              b.reject(e);
            }
          }
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async send(ops: Array<Record<string, unknown>>): Promise<unknown[]> {
    const res = await this.db.query<{ r: unknown[] }>('SELECT billing_batch($1::jsonb) AS r', [JSON.stringify(ops)]);
    return res.rows[0].r;
  }
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
