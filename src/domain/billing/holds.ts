import { ConflictError, InvalidApiKeyError, QuotaExhaustedError, UnavailableError, ValidationError } from '../errors';
import type { HoldRepository } from '../ports/billing';
import type { Tx } from '../ports/transactions';
import { type LedgerEntryInput, type ReleaseRow, type ReserveRow, type SettleRow } from './operations';

/**
 * Quota holds: money is reserved before an upstream call and either settled into the ledger (ledger.ts) or
 * released. Rules (docs/decisions/0011-quota-holds.md):
 * - A key spends its budget: the remain_quota of `COALESCE(quota_owner_id, id)`. A rotation points the old
 *   key (enabled through the grace period) at its replacement, so both spend one balance. An owner never
 *   has an owner itself ("root"); deleting the owner makes the key fall back to its own balance.
 * - reserve: one transaction = hold insert (recording the budget key and whether the wallet is debited) +
 *   conditional debit of the budget's remain_quota + conditional debit of the account wallet (when it has a
 *   quota; an unlimited wallet is not written, and the hold says so). The
 *   calling key itself must be usable (enabled, not expired), checked under its row lock. Any debit that
 *   does not match means insufficient quota: everything rolls back and nothing is written.
 * - remain_quota falls at reserve time; used_quota (calling key and account) rises only at settle.
 * - settle: one transaction = delete the hold + ledger row + refund (reserved - actual) to the budget +
 *   used += actual on the calling key. With `chargeExcess`, an actual cost above the hold is taken from the
 *   budget and the wallet as far as both can pay (never below zero; unlimited pays in full); the rest is the
 *   ledger row's `shortfall`.
 * - Reserve, settle and release are SQL functions (src/db/functions.sql), one round trip each; they return a
 *   status instead of raising, so a caller's own transaction is never aborted by a refused reserve.
 * - release: one transaction = delete the hold + refund the whole amount to the budget, and to the wallet when
 *   the hold debited it. No ledger row. The sweeper releases expired holds the same way.
 * - A refund goes to the current budget of the key the hold was debited from: when a rotation moved that
 *   budget on meanwhile, it follows it; when that key was deleted, its money went with it.
 * - Every step is idempotent by the hold's business key; the ledger's unique request_id / task_id is a
 *   second guard against billing one call twice.
 * Lock order everywhere: hold row, then the budget key row, then the calling key row when it is another
 * one, then the account row. Budget before caller is the order a key delete takes too (the deleted owner,
 * then, by ON DELETE SET NULL, the keys it paid for), and the order a rotation locks in.
 * Budget rows are written only with `quota_owner_id IS NULL` in the WHERE clause: when a rotation moved the
 * budget between our read and our lock, nothing is written and the whole operation runs again.
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
  /** Commit without waiting for the WAL flush (the relay; docs/decisions/0027-relay-billing-one-round-trip-group-commit.md). */
  asyncCommit?: boolean;
  /** The calling key's periodic budget: the hold must fit in what is left of it and is counted in it. */
  period?: PeriodBudget;
}

/** A key's budget for one calendar period (src/domain/limits/period.ts): credits, and the period's start (Unix s). */
export interface PeriodBudget {
  quota: number;
  start: number;
}

/** What billing_settle bills: the actual amount and the ledger row's columns. */
export interface SettleInput extends LedgerEntryInput {
  /** Credits actually billed; at most the reserved amount unless `chargeExcess`. */
  actualAmount: number;
  /** Bill an actual amount above the hold, as far as the balances can pay (the relay); otherwise a ValidationError. */
  chargeExcess?: boolean;
  /** Commit without waiting for the WAL flush (the relay; docs/decisions/0027-relay-billing-one-round-trip-group-commit.md). */
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

function assertCredits(value: number, field: string): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new ValidationError(`${field} must be a whole number >= 0`, field);
}

/** Raises the error a reserve/settle/release status names; returns normally for the success statuses. */
function raiseFor(status: string, businessKey: string): void {
  switch (status) {
    case 'key':
      throw new InvalidApiKeyError();
    case 'quota':
      throw new QuotaExhaustedError();
    case 'period_quota':
      throw new QuotaExhaustedError('You exceeded your current quota: the key\'s budget for this period (period_quota) is used up until the next one');
    case 'account_quota':
      throw new QuotaExhaustedError('You exceeded your current quota: the account balance is insufficient');
    case 'moved':
      throw new UnavailableError('the key\'s budget is being moved by a key rotation; try again');
    default:
      throw new Error(`unexpected billing status '${status}' for hold ${businessKey}`);
  }
}

export function checkSettle(input: SettleInput): void {
  assertCredits(input.actualAmount, 'actualAmount');
}

export function checkReserve(input: ReserveInput): void {
  assertCredits(input.amount, 'amount');
  if (!(input.ttlSeconds > 0)) throw new ValidationError('ttlSeconds must be > 0', 'ttlSeconds');
}

/** The outcome of a reserve from its row: the new hold, an existing one for the same parameters, or the error. */
export async function reserveOutcome(holds: HoldRepository, input: ReserveInput, r: ReserveRow, tx?: Tx): Promise<Hold & { created: boolean }> {
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
  const existing = await holds.get(input.businessKey, tx);
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
 * One round trip: the SQL function billing_reserve does the whole transaction.
 */
export async function reserve(holds: HoldRepository, input: ReserveInput, tx?: Tx): Promise<Hold & { created: boolean }> {
  checkReserve(input);
  return reserveOutcome(holds, input, await holds.reserve(input, tx), tx);
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
 * transaction (one round trip: billing_settle). Safe to repeat (activity retries): only the
 * first call bills. An amount above the hold is a ValidationError unless `chargeExcess`: then the excess is
 * taken from the key's budget and the account as far as both can pay and the rest recorded as the ledger
 * row's shortfall.
 */
export async function settle(holds: HoldRepository, businessKey: string, input: SettleInput, tx?: Tx): Promise<SettleResult> {
  checkSettle(input);
  return settleOutcome(businessKey, input, await holds.settle(businessKey, input, tx));
}

export function releaseOutcome(businessKey: string, r: ReleaseRow): ReleaseResult {
  if (r.o_status === 'released') return { status: 'released', refunded: r.o_refunded };
  if (r.o_status === 'not_found') return { status: 'not_found' };
  return raiseFor(r.o_status, businessKey) as never;
}

/** Gives the whole hold back without billing (failed call, cancelled task). Safe to repeat. One round trip. */
export async function release(holds: HoldRepository, businessKey: string, opts: { asyncCommit?: boolean } = {}, tx?: Tx): Promise<ReleaseResult> {
  return releaseOutcome(businessKey, await holds.release(businessKey, opts, tx));
}
