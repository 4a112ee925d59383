import type { Pool } from 'pg';

/**
 * Requests-per-minute permits taken in advance: a process takes several of a key's requests of the current minute
 * from PostgreSQL at once (limits_take_requests, src/db/functions.sql) and admits the next requests from them in
 * memory, so most limited requests wait for no round trip. The count in PostgreSQL is still the only authority:
 * no more than the limit is ever granted in a minute, over all replicas.
 * - How many a process asks for shrinks with what is left of the minute (a sixteenth of it, at most MAX_TAKE), so
 *   near the limit permits go one at a time and no replica sits on requests another needs.
 * - One trip per key at a time: requests that arrive while one is on its way wait for it and take from what it
 *   brought; when it brought nothing the minute is used up and they are refused.
 * - Permits not used for IDLE_MS go back (the minute's count is lowered), as do all at close(); those of a
 *   minute that has ended simply lapse. A killed process's unused permits stay counted until its minute ends.
 */

const MAX_TAKE = 64;
const IDLE_MS = 500;
const SWEEP_EVERY_MS = 250;

interface Permits {
  minute: number;
  /** Taken from PostgreSQL and not used yet. */
  left: number;
  /** The minute's count in PostgreSQL after this process's last take (every replica's). */
  counted: number;
  /** Date.now() of the last take or use. */
  lastUsed: number;
  /** The take on its way, resolving to how many it brought. */
  taking: Promise<number> | null;
}

/** One admitted request: what is known of the minute's count once it is counted in. */
export interface PermitGrant {
  /** Requests of the minute counted so far, this one included (every replica's, as of the last take). */
  requests: number;
}

export class RequestPermits {
  private readonly byKey = new Map<number, Permits>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Pool,
    private readonly now: () => number,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  /** Admits one request of `tokenId` in `minute` under `rpm`, or returns null: the minute's requests are used up. */
  async take(tokenId: number, minute: number, rpm: number): Promise<PermitGrant | null> {
    for (;;) {
      let p = this.byKey.get(tokenId);
      if (p && p.minute !== minute && !p.taking) {
        this.byKey.delete(tokenId);
        p = undefined;
      }
      if (p && p.minute === minute && p.left > 0) {
        p.left--;
        p.lastUsed = Date.now();
        return { requests: p.counted - p.left };
      }
      if (p?.taking) {
        const brought = await p.taking;
        if (brought === 0 && p.minute === minute) return null;
        continue;
      }
      const entry: Permits = p ?? { minute, left: 0, counted: 0, lastUsed: Date.now(), taking: null };
      const want = Math.max(1, Math.min(MAX_TAKE, Math.floor((rpm - entry.counted) / 16)));
      entry.taking = this.fetch(entry, tokenId, minute, rpm, want);
      this.byKey.set(tokenId, entry);
      this.startSweeping();
      const brought = await entry.taking;
      if (brought === 0) return null;
    }
  }

  /** This process's permits of the key's minute not used yet (counted in PostgreSQL, not yet requests). */
  unused(tokenId: number, minute: number): number {
    const p = this.byKey.get(tokenId);
    return p && p.minute === minute ? p.left : 0;
  }

  private async fetch(entry: Permits, tokenId: number, minute: number, rpm: number, want: number): Promise<number> {
    try {
      const res = await this.db.query<{ o_granted: number; o_requests: number }>('SELECT * FROM limits_take_requests($1, $2, $3, $4)', [
        tokenId,
        minute,
        rpm,
        want,
      ]);
      const { o_granted: granted, o_requests: requests } = res.rows[0];
      entry.left += granted;
      entry.counted = requests;
      entry.lastUsed = Date.now();
      return granted;
    } finally {
      entry.taking = null;
    }
  }

  private startSweeping(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.giveBackIdle(false), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  /** Returns the unused permits idle for IDLE_MS (all of them when `all`); drops those of ended minutes. */
  private giveBackIdle(all: boolean): Promise<unknown> {
    // Minutes by the limiter's clock, idleness in real time.
    const minute = Math.floor(this.now() / 60_000);
    const nowMs = Date.now();
    const returning: Array<Promise<unknown>> = [];
    for (const [tokenId, p] of this.byKey) {
      if (p.taking) continue;
      if (p.minute !== minute || p.left === 0) {
        if (p.minute !== minute || nowMs - p.lastUsed >= IDLE_MS) this.byKey.delete(tokenId);
        continue;
      }
      if (!all && nowMs - p.lastUsed < IDLE_MS) continue;
      this.byKey.delete(tokenId);
      returning.push(
        this.db
          .query('UPDATE key_rate_windows SET requests = GREATEST(requests - $3, 0) WHERE token_id = $1 AND minute = $2', [tokenId, p.minute, p.left])
          .catch(this.onError),
      );
    }
    if (this.byKey.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
    return Promise.all(returning);
  }

  /** Gives every unused permit back (shutdown). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.giveBackIdle(true);
  }
}
