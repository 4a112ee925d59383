import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { hasLimits, type KeyLimits } from '../domain/limits/key-limits';
import { RequestPermits } from './request-permits';
import { type Admission, KeyLimitError, type LimitKind, UNLIMITED } from '../domain/limits/admission';
import type { KeyLimiter } from '../domain/ports/key-limiter';

/**
 * Per-key limits, exact across replicas because PostgreSQL keeps the counts: requests and billed tokens per fixed
 * minute (`floor(now / 60 s)`, the same window on every replica) and requests in flight. A key without limits
 * costs nothing here (no query). A requests-per-minute limit alone is admitted from permits the process takes in
 * advance (request-permits.ts), most often with no round trip; a token or concurrency limit costs one function call
 * each at admission.
 *
 * Token limits admit while the minute's billed tokens are under the limit; a call's tokens count when it settles,
 * so one large call may overshoot once.
 */

/** How long an in-flight slot lives without renewal: a killed replica's slots are free again within this. */
export const SLOT_TTL_SECONDS = 30;
const RENEW_EVERY_MS = 10_000;

export interface RateLimiterOptions {
  /** Milliseconds since the epoch; tests move it to the next minute. */
  now?: () => number;
  /** Counts refused requests by key id and limit kind (for /metrics). */
  onLimited?: (tokenId: number, kind: LimitKind) => void;
}

export class KeyRateLimiter implements KeyLimiter {
  /** The clock of windows and periods (ms since the epoch). */
  readonly now: () => number;
  private readonly live = new Set<string>();
  private renewTimer: NodeJS.Timeout | null = null;
  private lastSweptMinute = 0;
  private readonly permits: RequestPermits;

  constructor(
    private readonly db: Pool,
    private readonly opts: RateLimiterOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.permits = new RequestPermits(db, this.now);
  }

  /**
   * Admits one request of `tokenId` under `limits`, or rejects with KeyLimitError (429, nothing counted). A key
   * without limits is admitted at once (UNLIMITED, no promise); a promise only when a limit is counted.
   */
  admit(tokenId: number, limits: KeyLimits): Admission | Promise<Admission> {
    return hasLimits(limits) ? this.admitCounted(tokenId, limits) : UNLIMITED;
  }

  private async admitCounted(tokenId: number, limits: KeyLimits): Promise<Admission> {
    // The slot first: a request refused for concurrency must not use up one of the minute's requests.
    const slot = limits.concurrency > 0 ? await this.acquireSlot(tokenId, limits.concurrency) : null;
    const release = () => {
      if (slot && this.live.delete(slot)) this.db.query('DELETE FROM key_inflight WHERE slot = $1', [slot]).catch(() => undefined);
    };
    if (limits.rpm === 0 && limits.tpm === 0) return { headers: {}, release, billedTokens() {} };

    const nowMs = this.now();
    const minute = Math.floor(nowMs / 60_000);
    const resetSeconds = secondsLeftInMinute(minute, nowMs);
    let row: { o_admitted: boolean; o_requests: number; o_tokens: number };
    try {
      if (limits.tpm === 0) {
        // Requests alone: from this process's permits, most often with no round trip.
        const grant = await this.permits.take(tokenId, minute, limits.rpm);
        row = grant ? { o_admitted: true, o_requests: grant.requests, o_tokens: 0 } : { o_admitted: false, o_requests: limits.rpm, o_tokens: 0 };
      } else {
        row = (await this.db.query('SELECT * FROM limits_admit($1, $2, $3, $4)', [tokenId, minute, limits.rpm, limits.tpm])).rows[0];
      }
    } catch (err) {
      release();
      throw err;
    }
    this.sweepOldWindows(minute);
    const headers = windowHeaders(limits, row.o_requests, Number(row.o_tokens), resetSeconds);
    if (!row.o_admitted) {
      release();
      const kind: LimitKind = limits.rpm > 0 && row.o_requests >= limits.rpm ? 'requests' : 'tokens';
      this.opts.onLimited?.(tokenId, kind);
      throw new KeyLimitError(kind, resetSeconds, headers);
    }
    const billedTokens = limits.tpm > 0
      ? (tokens: number) => {
        if (tokens <= 0) return;
        const m = Math.floor(this.now() / 60_000);
        this.db.query(
          `INSERT INTO key_rate_windows AS w (token_id, minute, tokens) VALUES ($1, $2, $3)
           ON CONFLICT (token_id, minute) DO UPDATE SET tokens = w.tokens + EXCLUDED.tokens`,
          [tokenId, m, tokens],
        ).catch(() => undefined);
      }
      : () => {};
    return { headers, release, billedTokens };
  }

  private async acquireSlot(tokenId: number, limit: number): Promise<string> {
    const slot = randomUUID();
    const res = await this.db.query<{ o_acquired: boolean; o_in_flight: number }>('SELECT * FROM limits_acquire_slot($1, $2, $3, $4)', [
      tokenId,
      slot,
      limit,
      SLOT_TTL_SECONDS,
    ]);
    if (!res.rows[0].o_acquired) {
      this.opts.onLimited?.(tokenId, 'concurrency');
      throw new KeyLimitError('concurrency', 1, {});
    }
    this.live.add(slot);
    this.scheduleRenewal();
    return slot;
  }

  /** While any slot of this process is held, its lifetime is pushed forward every RENEW_EVERY_MS. */
  private scheduleRenewal(): void {
    if (this.renewTimer) return;
    this.renewTimer = setInterval(() => {
      if (this.live.size === 0) {
        clearInterval(this.renewTimer!);
        this.renewTimer = null;
        return;
      }
      this.db
        .query(`UPDATE key_inflight SET expires_at = now() + $2 * interval '1 second' WHERE slot = ANY($1::uuid[])`, [[...this.live], SLOT_TTL_SECONDS])
        .catch(() => undefined);
    }, RENEW_EVERY_MS);
    this.renewTimer.unref();
  }

  /** Once per minute per process: the windows of minutes before the last are of no use any more. */
  private sweepOldWindows(minute: number): void {
    if (minute <= this.lastSweptMinute) return;
    this.lastSweptMinute = minute;
    this.db.query('DELETE FROM key_rate_windows WHERE minute < $1', [minute - 1]).catch(() => undefined);
  }

  /** What a key has used of the current minute and how many of its requests are in flight (all replicas). */
  async usage(tokenId: number): Promise<{ requests: number; tokens: number; inFlight: number; resetSeconds: number }> {
    const nowMs = this.now();
    const minute = Math.floor(nowMs / 60_000);
    const res = await this.db.query<{ requests: number | null; tokens: number | null; in_flight: number }>(
      `SELECT (SELECT requests FROM key_rate_windows WHERE token_id = $1 AND minute = $2) AS requests,
              (SELECT tokens FROM key_rate_windows WHERE token_id = $1 AND minute = $2) AS tokens,
              (SELECT count(*)::int FROM key_inflight WHERE token_id = $1 AND expires_at > now()) AS in_flight`,
      [tokenId, minute],
    );
    const r = res.rows[0];
    // This process's unused permits are not requests; another replica's go back within a second of idleness.
    const requests = Math.max(0, (r.requests ?? 0) - this.permits.unused(tokenId, minute));
    return { requests, tokens: Number(r.tokens ?? 0), inFlight: r.in_flight, resetSeconds: secondsLeftInMinute(minute, nowMs) };
  }

  /** Frees every slot this process holds and gives its unused request permits back (shutdown). */
  async close(): Promise<void> {
    await this.permits.close();
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = null;
    const slots = [...this.live];
    this.live.clear();
    if (slots.length > 0) await this.db.query('DELETE FROM key_inflight WHERE slot = ANY($1::uuid[])', [slots]).catch(() => undefined);
  }
}

/** Whole seconds until `minute` ends (at least 1): Retry-After and the reset headers. */
function secondsLeftInMinute(minute: number, nowMs: number): number {
  return Math.max(1, Math.ceil(((minute + 1) * 60_000 - nowMs) / 1000));
}

/** OpenAI's headers: the limit, what is left of it this minute, and when the minute ends (`12s`). */
function windowHeaders(limits: KeyLimits, requests: number, tokens: number, resetSeconds: number): Record<string, string> {
  const h: Record<string, string> = {};
  if (limits.rpm > 0) {
    h['x-ratelimit-limit-requests'] = String(limits.rpm);
    h['x-ratelimit-remaining-requests'] = String(Math.max(0, limits.rpm - requests));
    h['x-ratelimit-reset-requests'] = `${resetSeconds}s`;
  }
  if (limits.tpm > 0) {
    h['x-ratelimit-limit-tokens'] = String(limits.tpm);
    h['x-ratelimit-remaining-tokens'] = String(Math.max(0, limits.tpm - tokens));
    h['x-ratelimit-reset-tokens'] = `${resetSeconds}s`;
  }
  return h;
}
