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

export class ChannelCooldown {
  private readonly byName = new Map<string, Health>();
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
}
