import type { HoldRepository } from '../ports/billing';
import type { Tx } from '../ports/transactions';
import { ConflictError } from '../errors';
import { BillingBatcher } from './batcher';
import { CreditLeases, type LeaseDraw, type LeaseOptions } from './credit-leases';
import {
  checkReserve,
  checkSettle,
  type Hold,
  type PeriodBudget,
  type ReleaseResult,
  type ReserveInput,
  release,
  reserveOutcome,
  releaseOutcome,
  settle,
  type SettleInput,
  type SettleResult,
  settleOutcome,
} from './holds';
import type { LedgerEntryInput } from './operations';
import type { SettleJournal } from './settle-journal';
import { withFields } from '../../with-fields';

/**
 * The billing of one process, as the relay (every endpoint) and video submits use it: holds before a call,
 * settles and releases after, through one group-commit queue (BillingBatcher) and the credit leases calls are
 * drawn from (off with `leases: false`). The composition root makes one and hands it to every service.
 */

/** A call's reservation: its own hold row, or a draw from this process's credit lease on the key. */
export type CallHold = { kind: 'hold'; businessKey: string; amount: number } | { kind: 'lease'; draw: LeaseDraw; amount: number };

export interface HoldRequest {
  requestId: string;
  tokenId: number;
  accountId: number;
  amount: number;
  reason: string;
  ttlSeconds: number;
  /** The key's periodic budget, when it has one: then the call takes a hold of its own (never a lease draw). */
  period?: PeriodBudget;
}

/** What a finished call costs (credits; may exceed its hold: the excess is charged as far as the balances allow) and its ledger row. */
export interface Charge {
  quota: number;
  entry: LedgerEntryInput;
}

/** How a settle ended: `settled` with what was billed and what the balances could not pay, or another status. */
export interface CallSettled {
  status: string;
  billed: number;
  shortfall: number;
}

export class BillingService {
  readonly batcher: BillingBatcher;
  readonly leases: CreditLeases | null;

  constructor(
    private readonly holds: HoldRepository,
    opts: { leases?: LeaseOptions | false; journal?: SettleJournal } = {},
  ) {
    this.batcher = new BillingBatcher(holds);
    this.leases = opts.leases === false ? null : new CreditLeases(this.batcher, { ...opts.leases, journal: opts.journal });
  }

  /**
   * Reserves the estimate on the key's budget and the account wallet (429 insufficient_quota when it does not fit):
   * from the process's lease on the key when it covers it (no round trip), else as a hold of its own, `req:<id>`.
   */
  async hold(h: HoldRequest): Promise<CallHold> {
    // A lease is credit taken in bulk, counted in no period: a key with a periodic budget holds call by call.
    const draw = h.period ? null : this.leases?.draw(h.tokenId, h.accountId, h.amount);
    if (draw) return { kind: 'lease', draw, amount: h.amount };
    const businessKey = `req:${h.requestId}`;
    const hold = await this.reserveHold({
      businessKey, tokenId: h.tokenId, accountId: h.accountId, amount: h.amount, reason: h.reason, ttlSeconds: h.ttlSeconds, period: h.period,
    });
    return { kind: 'hold', businessKey, amount: hold.amount };
  }

  /** Bills the call: ledger row, refund of the rest of its hold (or the excess charged), used_quota; one transaction. */
  async settle(hold: CallHold, c: Charge): Promise<CallSettled> {
    return (await this.bill(hold, c)).outcome;
  }

  /**
   * Bills the call as `settle` does, and resolves as soon as the bill outlives this process, which is when its answer
   * may leave (docs/decisions/0037-a-delivered-answer-is-billed.md): a call drawn from a lease once its settle is
   * in the journal (0062), any other once its settle committed. `outcome` resolves when PostgreSQL answered.
   */
  async bill(hold: CallHold, c: Charge): Promise<{ outcome: Promise<CallSettled> }> {
    if (hold.kind === 'lease') {
      const { durable, outcome } = this.leases!.settle(hold.draw, c);
      await durable;
      return { outcome };
    }
    const r = await this.settleHold(hold.businessKey, withFields(c.entry, { actualAmount: c.quota, chargeExcess: true }));
    const settled = r.status === 'settled' ? { status: r.status, billed: r.billed, shortfall: r.shortfall } : { status: r.status, billed: 0, shortfall: 0 };
    return { outcome: Promise.resolve(settled) };
  }

  /** Gives the whole hold back (failure, upstream error, client gone); never throws (the sweeper is the backstop). */
  async release(hold: CallHold, onError?: (err: unknown) => void): Promise<void> {
    if (hold.kind === 'lease') {
      this.leases!.giveBack(hold.draw);
      return;
    }
    try {
      await this.releaseHold(hold.businessKey);
    } catch (err) {
      onError?.(err);
    }
  }

  /** reserve (holds.ts) through the group commit. */
  async reserveHold(input: ReserveInput): Promise<Hold & { created: boolean }> {
    checkReserve(input);
    const row = await this.batcher.submit({
      op: 'reserve',
      key: input.businessKey,
      account: input.accountId,
      token: input.tokenId,
      amount: input.amount,
      reason: input.reason,
      ttlSeconds: input.ttlSeconds,
      period: input.period,
    });
    return reserveOutcome(this.holds, input, row);
  }

  /** settle (holds.ts) through the group commit. */
  async settleHold(businessKey: string, input: SettleInput): Promise<SettleResult> {
    checkSettle(input);
    const row = await this.batcher.submit({ op: 'settle', key: businessKey, actual: input.actualAmount, chargeExcess: input.chargeExcess === true, entry: input });
    return settleOutcome(businessKey, input, row);
  }

  /** release (holds.ts) through the group commit. */
  async releaseHold(businessKey: string): Promise<ReleaseResult> {
    return releaseOutcome(businessKey, await this.batcher.submit({ op: 'release', key: businessKey }));
  }

  /**
   * A video submit's hold and task row in one operation: the row is inserted only when the hold was taken, and a
   * replayed submit's hold is released there too. Resolves with the insert's result: a created task as its id and
   * created_at, a replayed one whole.
   */
  async reserveVideoTask(input: ReserveInput, task: object): Promise<{ status: 'created' | 'replayed'; task: Record<string, unknown> }> {
    checkReserve(input);
    const row = await this.batcher.submit({
      op: 'video_submit',
      key: input.businessKey,
      account: input.accountId,
      token: input.tokenId,
      amount: input.amount,
      reason: input.reason,
      ttlSeconds: input.ttlSeconds,
      period: input.period,
      task,
    });
    await reserveOutcome(this.holds, input, row);
    if (!row.video) throw new ConflictError(`hold ${input.businessKey} already exists`, 'businessKey');
    return row.video;
  }

  /**
   * Settles a hold inside the caller's transaction (not through the group commit): the bill commits with what the
   * caller writes beside it (a video task's end).
   */
  settleInTransaction(tx: Tx, businessKey: string, input: SettleInput): Promise<SettleResult> {
    return settle(this.holds, businessKey, input, tx);
  }

  /** Gives a hold back inside the caller's transaction (a video task that failed). */
  releaseInTransaction(tx: Tx, businessKey: string): Promise<ReleaseResult> {
    return release(this.holds, businessKey, {}, tx);
  }

  /**
   * Read-your-writes for the readers of balances and the ledger in this process (`/api/*`): every settle queued so
   * far has committed, and the leases not in use are given back, so remain_quota shows what calls left.
   */
  async barrier(): Promise<void> {
    if (this.leases?.active) await this.leases.barrier();
    else await this.batcher.idle();
  }

  /** At shutdown, after the last request: the settles still queued run and every lease is given back. */
  async close(): Promise<void> {
    if (this.leases) await this.leases.close();
    await this.batcher.idle();
  }
}

export type { Hold };
