import { randomUUID } from 'node:crypto';
import type { BillingBatcher } from './batcher';
import { type LedgerEntryInput, operationJson } from './operations';
import type { JournalEntry, SettleJournal } from './settle-journal';

/**
 * Credit leases (docs/decisions/0031-credit-leases.md). A process takes
 * a chunk of a key's credit as one durable hold (billing_lease, src/db/functions.sql) and reserves its calls from it in
 * memory, so a call waits for no database round trip before its upstream request. Each call still holds its whole
 * estimate before it starts: the lease only moves where that hold is counted.
 * - A draw succeeds only when the lease's unreserved part covers the estimate; otherwise the call takes its own
 *   hold as before (exact at the edge of a budget) and a top-up is started in the background.
 * - A top-up covers `chunkCalls` calls of the estimate; a lease that ran dry while its top-up was on the way (calls
 *   came faster than a round trip through the group commit) doubles its chunk, up to `maxChunkCalls`, so a busy key
 *   is topped up early enough and its calls keep off the slow path of holds of their own (which wait for their commit).
 * - A top-up the budget cannot cover is retried at once at half the chunk, down to `chunkCalls`; one refused at that
 *   size is not retried for `refusedMs`: a nearly spent key is served call by call.
 * - A call's settle takes its cost out of the lease (billing_settle_lease); what it did not use stays in the lease.
 * - A lease unused for `idleMs` is given back (billing_release), as is every lease at `barrier()` and `close()`.
 *   One that lives on is renewed; a crashed process's lease expires after `ttlSeconds` and the sweeper returns it.
 * Every database operation goes through the process's BillingBatcher, in order, so a release queued after a
 * settle runs after it.
 */

export interface LeaseOptions {
  /** A top-up covers this many calls of the estimate that asked for it (default 32). */
  chunkCalls?: number;
  /** The most a busy lease's top-up grows to, in calls (default 1024). */
  maxChunkCalls?: number;
  ttlSeconds?: number;
  idleMs?: number;
  refusedMs?: number;
  tickMs?: number;
  onError?: (err: unknown, what: string) => void;
  /** Where a settle is recorded before its answer leaves; without one the answer waits for the settle's commit. */
  journal?: SettleJournal;
}

interface Lease {
  key: string;
  tokenId: number;
  accountId: number;
  /** The lease's amount in the database once every settle queued so far has run. */
  held: number;
  /** Reserved by calls in flight. */
  drawn: number;
  inflight: number;
  lastUsed: number;
  renewedAt: number;
  /** Its database row is gone or disagrees with `held`: no more draws; released once idle. */
  stale: boolean;
  /** Calls a top-up covers: grows while the lease runs dry before its top-ups land, shrinks when one is refused. */
  chunkCalls: number;
  /** The lease already grew while the top-up in flight was on the way: once per top-up. */
  grew: boolean;
}

export interface LeaseDraw {
  readonly lease: Lease;
  readonly amount: number;
}

/** A call drawn from a lease, to bill: its cost in credits and its ledger row. */
export interface LeaseCharge {
  quota: number;
  entry: LedgerEntryInput;
}

export interface LeaseSettleResult {
  status: string;
  billed: number;
  shortfall: number;
}

export class CreditLeases {
  private readonly leases = new Map<number, Lease>();
  /** The top-up in flight per token: barrier() and close() wait for them, so no lease taken meanwhile is left behind. */
  private readonly toppingUp = new Map<number, Promise<void>>();
  private readonly refusedUntil = new Map<number, number>();
  private readonly instance = randomUUID();
  private seq = 0;
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly chunkCalls: number;
  private readonly maxChunkCalls: number;
  private readonly ttlSeconds: number;
  private readonly idleMs: number;
  private readonly refusedMs: number;

  constructor(private readonly billing: BillingBatcher, private readonly opts: LeaseOptions = {}) {
    this.chunkCalls = opts.chunkCalls ?? 32;
    this.maxChunkCalls = Math.max(this.chunkCalls, opts.maxChunkCalls ?? 1024);
    this.ttlSeconds = opts.ttlSeconds ?? 120;
    this.idleMs = opts.idleMs ?? 2_000;
    this.refusedMs = opts.refusedMs ?? 1_000;
    this.timer = setInterval(() => this.tick(), opts.tickMs ?? 500);
    this.timer.unref();
  }

  /** Reserves `amount` for one call from this process's lease on the key, or null: the call takes its own hold. */
  draw(tokenId: number, accountId: number, amount: number): LeaseDraw | null {
    if (this.closed) return null;
    const lease = this.leases.get(tokenId);
    const now = Date.now();
    if (lease && !lease.stale && lease.accountId === accountId && lease.held - lease.drawn >= amount) {
      lease.drawn += amount;
      lease.inflight++;
      lease.lastUsed = now;
      // Top up ahead of need, while a quarter of a chunk is left.
      if (lease.held - lease.drawn < (amount * lease.chunkCalls) / 4) this.topUp(tokenId, accountId, amount);
      return { lease, amount };
    }
    // Dry with its top-up on the way (not a first lease still waiting for its first chunk): calls outran the round trip.
    if (lease && !lease.stale && !lease.grew && lease.held > 0 && this.toppingUp.has(tokenId) && lease.chunkCalls < this.maxChunkCalls) {
      lease.grew = true;
      lease.chunkCalls = Math.min(this.maxChunkCalls, lease.chunkCalls * 2);
    }
    this.topUp(tokenId, accountId, amount);
    return null;
  }

  /** A call that will not be billed (failed, client gone): its reservation goes back to the lease. */
  giveBack(d: LeaseDraw): void {
    d.lease.drawn -= d.amount;
    d.lease.inflight--;
  }

  /**
   * Bills a call drawn from a lease. Up to its reservation, plus what the lease has unreserved when the cost is
   * higher, is paid by the lease; the rest as billing_settle charges an excess. `durable` resolves once the bill
   * outlives this process: at once when the settle is in the journal, else when it committed; `outcome` when
   * PostgreSQL answered it. A journaled settle that fails is retried until it is answered (or the process stops:
   * then the journal keeps it for the next one); one without a journal rejects both.
   */
  settle(d: LeaseDraw, c: LeaseCharge): { durable: Promise<void>; outcome: Promise<LeaseSettleResult> } {
    const l = d.lease;
    // Before this call's reservation is taken off `drawn`: the unreserved part is what other calls do not need.
    const extra = l.stale ? 0 : Math.min(Math.max(0, c.quota - d.amount), Math.max(0, l.held - l.drawn));
    const fromLease = Math.min(c.quota, d.amount + extra);
    l.drawn -= d.amount;
    l.inflight--;
    l.lastUsed = Date.now();
    l.held -= fromLease;
    // Encoded once: the journal keeps the very JSON the group commit sends.
    const op = operationJson({ op: 'settle_lease', key: l.key, portion: fromLease, actual: c.quota, account: l.accountId, token: l.tokenId, entry: c.entry });
    const recorded = this.opts.journal?.append(op) ?? null;
    const outcome = this.commit(l, op, fromLease, recorded);
    if (!recorded) {
      const durable = outcome.then(() => undefined);
      // A caller may await only one of the two: the other's rejection is not an unhandled one.
      durable.catch(() => undefined);
      return { durable, outcome };
    }
    return { durable: Promise.resolve(), outcome };
  }

  private async commit(l: Lease, op: string, fromLease: number, recorded: JournalEntry | null): Promise<LeaseSettleResult> {
    let row;
    for (let attempt = 0; ; attempt++) {
      try {
        // Journaled, its answer is out: it may wait for company in the group commit.
        row = await this.billing.submitEncoded<'settle_lease'>(op, { linger: recorded !== null });
        // A key rotation moved the budget under this settle, more often than the statement tries again: nothing was
        // billed. Answered as a failure: without a journal the answer is withheld, with one the settle is retried.
        if (row.o_status === 'moved') throw new Error("the key's budget moved while the call was settled");
        break;
      } catch (err) {
        // Whether it ran is unknown: stop drawing from this lease; releasing it returns whatever is left.
        l.stale = true;
        if (!recorded || this.closed) throw err;
        this.opts.onError?.(err, 'settling a journaled call (retrying)');
        // Unref'd: a process may exit meanwhile, and the journal keeps the settle for the next one.
        await new Promise((r) => setTimeout(r, Math.min(30_000, 250 * 2 ** attempt)).unref());
      }
    }
    if (recorded) this.opts.journal!.done(recorded);
    // Billed already: nothing came out of the lease's row this time.
    if (row.o_status === 'duplicate') l.held += fromLease;
    // Anything but this settle's own portion taken (a duplicate too: an earlier attempt whose answer was lost may
    // have taken it) leaves the row's figure unknown here: stop drawing; the release returns what the row holds.
    if (row.o_status !== 'settled' || row.o_from_lease !== fromLease) l.stale = true;
    return { status: row.o_status, billed: Number(row.o_billed), shortfall: Number(row.o_shortfall) };
  }

  /** Read-your-writes for readers of balances and the ledger: every queued settle has run, idle leases are back. */
  async barrier(): Promise<void> {
    if (this.toppingUp.size > 0) await Promise.all(this.toppingUp.values());
    for (const lease of [...this.leases.values()]) if (lease.inflight === 0) this.releaseLease(lease);
    await this.billing.idle();
  }

  /** Stops drawing, gives every lease back once its calls are settled. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (let i = 0; i < 600 && [...this.leases.values()].some((l) => l.inflight > 0); i++) await new Promise((r) => setTimeout(r, 50));
    // A top-up still in flight would add to a lease after it was released: let it land first.
    await Promise.all(this.toppingUp.values());
    for (const lease of [...this.leases.values()]) this.releaseLease(lease);
    await this.billing.idle();
  }

  /** True when some lease or top-up is outstanding (the barrier has work to do). */
  get active(): boolean {
    return this.leases.size > 0 || this.toppingUp.size > 0;
  }

  private topUp(tokenId: number, accountId: number, amount: number): void {
    const now = Date.now();
    if (this.closed || amount <= 0 || this.toppingUp.has(tokenId) || (this.refusedUntil.get(tokenId) ?? 0) > now) return;
    let lease = this.leases.get(tokenId);
    if (lease && (lease.stale || lease.accountId !== accountId)) return;
    if (!lease) {
      lease = {
        key: `lease:${this.instance}:${tokenId}:${++this.seq}`, tokenId, accountId, held: 0, drawn: 0, inflight: 0, lastUsed: now, renewedAt: now, stale: false,
        chunkCalls: this.chunkCalls, grew: false,
      };
      this.leases.set(tokenId, lease);
    }
    const target = lease;
    target.grew = false;
    const chunk = amount * target.chunkCalls;
    const done = this.billing
      .submit({ op: 'lease', key: target.key, account: accountId, token: tokenId, amount: chunk, ttlSeconds: this.ttlSeconds })
      .then((row) => {
        if (row.o_status === 'ok') {
          target.held += chunk;
          target.renewedAt = Date.now();
        } else if (row.o_status === 'moved') {
          // The wallet turned limited or unlimited since the lease was taken: let this one go, take a new one.
          target.stale = true;
        } else if (target.chunkCalls > this.chunkCalls) {
          // The budget cannot cover a grown chunk: the next draw asks for half.
          target.chunkCalls = Math.max(this.chunkCalls, Math.floor(target.chunkCalls / 2));
        } else {
          this.refusedUntil.set(tokenId, Date.now() + this.refusedMs);
        }
      })
      .catch((err) => {
        // Whether it was taken is unknown: stop using this lease; releasing it settles the question.
        target.stale = true;
        this.opts.onError?.(err, 'taking a credit lease');
      })
      .finally(() => {
        this.toppingUp.delete(tokenId);
        if (target.held === 0 && target.inflight === 0 && !target.stale) this.forget(target);
      });
    this.toppingUp.set(tokenId, done);
  }

  private tick(): void {
    const now = Date.now();
    for (const lease of [...this.leases.values()]) {
      if (lease.inflight === 0 && (lease.stale || now - lease.lastUsed >= this.idleMs)) {
        this.releaseLease(lease);
      } else if (!lease.stale && now - lease.renewedAt > (this.ttlSeconds * 1000) / 3) {
        lease.renewedAt = now;
        this.billing.submit({ op: 'renew', key: lease.key, ttlSeconds: this.ttlSeconds }).then(
          (row) => {
            if (row.o_status !== 'ok') lease.stale = true;
          },
          (err) => this.opts.onError?.(err, 'renewing a credit lease'),
        );
      }
    }
    for (const [token, until] of this.refusedUntil) if (until <= now) this.refusedUntil.delete(token);
  }

  private releaseLease(lease: Lease): void {
    if (this.toppingUp.has(lease.tokenId) && this.leases.get(lease.tokenId) === lease) return;
    this.forget(lease);
    this.billing.submit({ op: 'release', key: lease.key }).catch((err) => this.opts.onError?.(err, 'releasing a credit lease'));
  }

  private forget(lease: Lease): void {
    if (this.leases.get(lease.tokenId) === lease) this.leases.delete(lease.tokenId);
  }
}
