import type { Pool } from 'pg';

/**
 * Makes what this process committed asynchronously (`synchronous_commit = off`) durable: one tiny transaction with
 * an ordinary synchronous commit flushes the write-ahead log up to its own commit record, and so every commit
 * before it. Concurrent callers share a flush: one that arrives while a flush runs waits for the next one (the
 * running one may have begun before its commit). Group commit for the callers that must not answer before their
 * writes are on disk (a video submit), without making every write wait for its own fsync.
 */
export class WalFlush {
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(private readonly db: Pool) {}

  flush(): Promise<void> {
    if (!this.running) {
      this.running = this.sync().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = null;
        return this.flush();
      });
    return this.queued;
  }

  private async sync(): Promise<void> {
    // Taking a transaction id makes the statement's transaction write a commit record, which a synchronous commit
    // waits to see flushed.
    await this.db.query('SELECT pg_catalog.txid_current()');
  }
}
