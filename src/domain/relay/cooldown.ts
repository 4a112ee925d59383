/**
 * Channel health per replica: a channel that failed `failures` times in a row (connection errors, timeouts,
 * 429, 5xx) cools down for `cooldownMs`; one success clears its count. Keyed by channel name, so a config reload
 * keeps the state of channels it keeps.
 */
export interface CooldownOptions {
  /** Consecutive failures that start a cool-down (default 3). */
  failures?: number;
  /** How long a cooling channel is skipped (default 30 s). */
  cooldownMs?: number;
  now?: () => number;
}

interface Health {
  consecutive: number;
  until: number;
}

/** The last attempts of one channel, for the console's Channels page (`GET /api/channel/`). */
class RecentAttempts {
  static readonly SIZE = 100;
  private readonly ok = new Uint8Array(RecentAttempts.SIZE);
  private readonly ms = new Float64Array(RecentAttempts.SIZE);
  private count = 0;
  private next = 0;
  lastAt = 0;

  add(ok: boolean, ms: number, at: number): void {
    this.ok[this.next] = ok ? 1 : 0;
    this.ms[this.next] = ms;
    this.next = (this.next + 1) % RecentAttempts.SIZE;
    this.count = Math.min(this.count + 1, RecentAttempts.SIZE);
    this.lastAt = at;
  }

  static readonly NONE = { attempts: 0, successRate: null, latencyMsP50: null, latencyMsP95: null };

  summary(): { attempts: number; successRate: number | null; latencyMsP50: number | null; latencyMsP95: number | null } {
    if (this.count === 0) return RecentAttempts.NONE;
    const ms = Array.from(this.ms.subarray(0, this.count)).sort((a, b) => a - b);
    const at = (q: number) => Math.round(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] * 10) / 10;
    let ok = 0;
    for (let i = 0; i < this.count; i++) ok += this.ok[i];
    return { attempts: this.count, successRate: ok / this.count, latencyMsP50: at(0.5), latencyMsP95: at(0.95) };
  }
}

/** What this replica saw of one channel lately. */
export interface ChannelHealthReport {
  /** Attempts in the window (the last 100 at most). */
  attempts: number;
  /** Share of those that succeeded, 0..1; null before the first attempt. */
  successRate: number | null;
  latencyMsP50: number | null;
  latencyMsP95: number | null;
  /** Failures in a row so far (a cool-down starts at the threshold). */
  consecutiveFailures: number;
  /** Unix ms until which the channel is skipped, or null when it is not cooling. */
  coolingUntil: number | null;
  /** Unix ms of the last attempt, or null. */
  lastAttemptAt: number | null;
}

export class ChannelCooldown {
  private readonly byName = new Map<string, Health>();
  private readonly recent = new Map<string, RecentAttempts>();
  private readonly failures: number;
  private readonly cooldownMs: number;
  private readonly now: () => number;

  constructor(opts: CooldownOptions = {}) {
    this.failures = Math.max(1, opts.failures ?? 3);
    this.cooldownMs = Math.max(0, opts.cooldownMs ?? 30_000);
    this.now = opts.now ?? Date.now;
  }

  isCooling(name: string): boolean {
    const h = this.byName.get(name);
    return h !== undefined && h.until > this.now();
  }

  recordFailure(name: string): void {
    const h = this.byName.get(name) ?? { consecutive: 0, until: 0 };
    h.consecutive++;
    if (h.consecutive >= this.failures) {
      h.until = this.now() + this.cooldownMs;
      // Once the window ends the channel gets another full count before cooling again.
      h.consecutive = 0;
    }
    this.byName.set(name, h);
  }

  recordSuccess(name: string): void {
    if (this.byName.size !== 0) this.byName.delete(name);
  }

  /** One upstream attempt and how long it took, into the channel's recent window. */
  recordAttempt(name: string, ok: boolean, ms: number): void {
    let r = this.recent.get(name);
    if (!r) this.recent.set(name, (r = new RecentAttempts()));
    r.add(ok, ms, this.now());
  }

  report(name: string): ChannelHealthReport {
    const h = this.byName.get(name);
    const r = this.recent.get(name);
    const now = this.now();
    return {
      ...(r ? r.summary() : RecentAttempts.NONE),
      consecutiveFailures: h?.consecutive ?? 0,
      coolingUntil: h && h.until > now ? h.until : null,
      lastAttemptAt: r?.lastAt || null,
    };
  }
}
