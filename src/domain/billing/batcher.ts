import type { HoldRepository } from '../ports/billing';
import { type BillingOperation, type BillingOperationKind, operationJson, type ResultOf } from './operations';

/**
 * Group commit (billing_batch, src/db/functions.sql): the reserves, settles and releases of concurrent calls go to
 * PostgreSQL together, one statement and one asynchronous commit per batch, so calls on one busy key do not queue
 * on its row lock one commit at a time. A batch is sent as soon as the previous one returned (a lone call waits for
 * nothing), except that operations no caller waits for (`linger`: settles already in the journal, whose answers
 * left) wait up to `lingerMs` for company, so they take a round trip per batch rather than one each, and go as soon
 * as `lingerBatch` of them are queued: PostgreSQL may share the machine, and a batch of 48 settles keeps it busy
 * for 2.4 ms in one piece, where 16 take 1 ms (the calls under way meanwhile wait for a core; decision 0063).
 * When a batch fails as a whole (a deadlock with another process, a lost connection), each of its operations runs
 * again alone, so every caller gets its own answer.
 */
export class BillingBatcher {
  private queue: Array<{ op: string; resolve: (row: unknown) => void; reject: (err: unknown) => void; linger: boolean }> = [];
  /** The longest the queue has been (benchmarks report it). */
  peakQueued = 0;
  /** Batches sent and the operations in them (benchmarks report the mean). */
  batches = 0;
  operations = 0;
  private running = false;
  /** Queued operations a caller waits for: while there is one, the next batch goes at once. */
  private waited = 0;
  private lingering: NodeJS.Timeout | null = null;

  /**
   * At most 48 operations per batch: each runs in a subtransaction, and a transaction with more than 64 of them
   * overflows PostgreSQL's per-backend subtransaction cache, which slows every session's snapshots.
   */
  constructor(
    private readonly holds: Pick<HoldRepository, 'runBatch'>,
    private readonly maxBatch = 48,
    private readonly lingerMs = 20,
    private readonly lingerBatch = Math.min(16, maxBatch),
  ) {}

  /** Queues one operation and resolves with its result row; with `linger`, no caller is waiting on it (above). */
  submit<O extends BillingOperation>(op: O, opts: { linger?: boolean } = {}): Promise<ResultOf[O['op']]> {
    return this.submitEncoded<O['op']>(operationJson(op), opts);
  }

  /** An operation already in billing_batch's JSON (operationJson): a journaled settle, or its replay. */
  submitEncoded<K extends BillingOperationKind>(json: string, opts: { linger?: boolean } = {}): Promise<ResultOf[K]> {
    const linger = opts.linger === true;
    return new Promise((resolve, reject) => {
      this.queue.push({ op: json, resolve: resolve as (row: unknown) => void, reject, linger });
      if (!linger) this.waited++;
      if (this.queue.length > this.peakQueued) this.peakQueued = this.queue.length;
      if (!this.running) this.sendOrLinger();
    });
  }

  private sendOrLinger(): void {
    if (this.queue.length === 0) return;
    if (this.waited > 0 || this.queue.length >= this.lingerBatch) {
      this.sendNow();
    } else if (!this.lingering) {
      this.lingering = setTimeout(() => {
        this.lingering = null;
        if (!this.running) void this.drain();
      }, this.lingerMs);
    }
  }

  /** The next batch goes now, whatever lingers. */
  private sendNow(): void {
    if (this.lingering) clearTimeout(this.lingering);
    this.lingering = null;
    void this.drain();
  }

  /** Operations waiting for a batch. */
  get queued(): number {
    return this.queue.length;
  }

  /** Resolves once nothing is queued or in flight (read-your-writes, shutdown); what lingers goes at once. */
  async idle(): Promise<void> {
    while (this.running || this.queue.length > 0) {
      if (!this.running) this.sendNow();
      await new Promise((r) => setImmediate(r));
    }
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      // After the first batch, only while someone waits or enough are queued: the rest lingers (sendOrLinger).
      for (let first = true; this.queue.length > 0 && (first || this.waited > 0 || this.queue.length >= this.lingerBatch); first = false) {
        const batch = this.queue.splice(0, this.maxBatch);
        for (const b of batch) if (!b.linger) this.waited--;
        this.batches++;
        this.operations += batch.length;
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
      this.sendOrLinger();
    }
  }

  private send(ops: string[]): Promise<unknown[]> {
    return this.holds.runBatch(ops);
  }
}
