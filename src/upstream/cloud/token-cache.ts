/**
 * Access tokens of a channel's cloud credentials (Entra ID, Google service accounts), cached until shortly before
 * they expire and minted one at a time per credential: however many calls wait on a cold or expiring channel, one
 * request goes to the token endpoint and they all get its answer. A mint that fails is not cached; the next call
 * tries again (the relay has by then cooled the channel down and failed over).
 */

export interface MintedToken {
  token: string;
  /** Lifetime from now, as the token endpoint said (`expires_in`). */
  expiresInSeconds: number;
}

interface Entry {
  token: string;
  /** When to mint the next one: a tenth of the lifetime (at most 5 minutes, at least 10 s) before it expires. */
  refreshAtMs: number;
  expiresAtMs: number;
}

export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  private readonly minting = new Map<string, Promise<string>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The token of credential `id`: the cached one while it is fresh, else the one mint in flight, else a new mint. */
  get(id: string, mint: () => Promise<MintedToken>): Promise<string> {
    const now = this.now();
    const cached = this.entries.get(id);
    if (cached && now < cached.refreshAtMs) return Promise.resolve(cached.token);
    const inFlight = this.minting.get(id);
    if (inFlight) return cached && now < cached.expiresAtMs ? Promise.resolve(cached.token) : inFlight;
    const next = mint()
      .then((m) => {
        const lifetimeMs = Math.max(0, m.expiresInSeconds) * 1000;
        const margin = Math.min(300_000, Math.max(10_000, lifetimeMs / 10));
        const at = this.now();
        this.entries.set(id, { token: m.token, expiresAtMs: at + lifetimeMs, refreshAtMs: at + Math.max(0, lifetimeMs - margin) });
        return m.token;
      })
      .finally(() => this.minting.delete(id));
    this.minting.set(id, next);
    // A refresh nobody waits for (a valid token was served) must not fail unheard; those who wait see its error.
    next.catch(() => undefined);
    // A token still valid serves the calls that come while its successor is minted.
    return cached && now < cached.expiresAtMs ? Promise.resolve(cached.token) : next;
  }

  /** Forgets a credential's token (the cloud refused it): the next call mints a new one. */
  forget(id: string): void {
    this.entries.delete(id);
  }
}
