import type { KeyRepository, TokenAuthRow } from '../ports/keys';
import { InvalidApiKeyError } from '../errors';
import type { QuotaPeriod } from '../limits/period';
import { bareKey, KEY_LENGTH, keyHashHex } from './key-material';
import { isExpired } from './token-record';

/** What an authenticated API key may do; never carries key material. */
export interface ApiKeyPrincipal {
  tokenId: number;
  accountId: number;
  name: string;
  /** The key's group as stored; '' means the 'default' group. */
  group: string;
  /** Allowlist of model ids; empty means no restriction. */
  models: string[];
  unlimitedQuota: boolean;
  expiredTime: number;
  /** The key's own rate limits (0: none of its own; its group's default may apply, src/domain/limits). */
  rpmLimit: number;
  tpmLimit: number;
  maxConcurrency: number;
  /** The key's own periodic budget (0: none of its own). */
  periodQuota: number;
  quotaPeriod: QuotaPeriod | null;
}

interface CachedKey {
  principal: ApiKeyPrincipal;
  status: number;
  loadedAt: number;
}

export interface KeyAuthenticator {
  authenticate(rawKey: string): Promise<ApiKeyPrincipal>;
  /**
   * `authenticate`, answered at once when the cache can answer: the principal of a cached, fresh key, or its refusal
   * thrown (malformed, disabled, expired). A promise only when the database must be read. Lets the request path skip
   * a promise and an event-loop turn for the keys it sees all the time.
   */
  lookup(rawKey: string): ApiKeyPrincipal | Promise<ApiKeyPrincipal>;
  /** Drops one key from this replica's cache. */
  invalidate(tokenId: number): void;
  /** Drops every cached key (used when change notifications may have been missed). */
  clear(): void;
  /**
   * While false, nothing is cached and every call reads the database: used while the change
   * notification channel is down, when a cached copy could not be trusted to be current.
   */
  setCaching(enabled: boolean): void;
  /** Number of cached keys (diagnostics and tests). */
  size(): number;
}

function principalOf(row: TokenAuthRow): ApiKeyPrincipal {
  return {
    tokenId: row.id,
    accountId: row.user_id,
    name: row.name,
    group: row.group,
    models: row.models.split(',').map((m) => m.trim()).filter(Boolean),
    unlimitedQuota: row.unlimited_quota,
    expiredTime: row.expired_time,
    rpmLimit: row.rpm_limit,
    tpmLimit: row.tpm_limit,
    maxConcurrency: row.max_concurrency,
    periodQuota: row.period_quota,
    quotaPeriod: row.quota_period,
  };
}

/**
 * A key by its id, as work that outlives its request (a batch's lines) acts for it: read afresh each time, so a key
 * disabled, deleted or expired since is refused (InvalidApiKeyError) from then on.
 */
export async function keyPrincipalById(keys: Pick<KeyRepository, 'authById'>, tokenId: number): Promise<ApiKeyPrincipal> {
  const row = await keys.authById(tokenId);
  if (!row) throw new InvalidApiKeyError('This API key has been deleted');
  if (row.status !== 1) throw new InvalidApiKeyError('This API key has been disabled');
  if (isExpired(row.expired_time)) throw new InvalidApiKeyError('This API key has expired');
  return principalOf(row);
}

/** Letters and digits only, exactly KEY_LENGTH of them; checked without a regex on the hot path. */
function isBareKey(s: string): boolean {
  if (s.length !== KEY_LENGTH) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ok = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (!ok) return false;
  }
  return true;
}

/**
 * Looks keys up by SHA-256 and keeps them in a per-replica cache. The cache never outlives a change
 * notification (docs/decisions/0010-key-changes-across-replicas.md); the TTL only bounds the damage of a lost notification channel.
 *
 * Races handled here: a database read that was in flight when a key changed is returned to the
 * request that started it (that request began before the change), but it is never cached and never
 * shared with requests that arrive after the change (an epoch counter guards both).
 */
export function createKeyAuthenticator(keys: Pick<KeyRepository, 'authByHash'>, opts: { ttlMs?: number; maxEntries?: number } = {}): KeyAuthenticator {
  const ttlMs = opts.ttlMs ?? 60_000;
  const maxEntries = opts.maxEntries ?? 100_000;
  const byHash = new Map<string, CachedKey>();
  /** Every cached hash of a key id (a rotated key may have had more than one). */
  const hashesById = new Map<number, Set<string>>();
  /** Reads in flight, shared by concurrent requests for the same key (a cold cache under load). */
  const inflight = new Map<string, Promise<CachedKey | null>>();
  let epoch = 0;
  let caching = true;

  async function load(hashHex: string): Promise<CachedKey | null> {
    const startEpoch = epoch;
    const row = await keys.authByHash(Buffer.from(hashHex, 'hex'));
    if (!row) return null;
    const entry: CachedKey = { status: row.status, loadedAt: Date.now(), principal: principalOf(row) };
    if (caching && epoch === startEpoch) {
      if (byHash.size >= maxEntries) evictOldest();
      byHash.set(hashHex, entry);
      const hashes = hashesById.get(row.id);
      if (hashes) hashes.add(hashHex);
      else hashesById.set(row.id, new Set([hashHex]));
    }
    return entry;
  }

  function loadShared(hashHex: string): Promise<CachedKey | null> {
    let p = inflight.get(hashHex);
    if (!p) {
      p = load(hashHex).finally(() => {
        // Only remove our own promise: an invalidation may have replaced it already.
        if (inflight.get(hashHex) === p) inflight.delete(hashHex);
      });
      inflight.set(hashHex, p);
    }
    return p;
  }

  /** Drops the least recently loaded tenth of the cache (Map order is insertion order). */
  function evictOldest(): void {
    let n = Math.max(1, Math.floor(maxEntries / 10));
    for (const [hashHex, entry] of byHash) {
      if (n-- <= 0) break;
      byHash.delete(hashHex);
      const hashes = hashesById.get(entry.principal.tokenId);
      hashes?.delete(hashHex);
      if (hashes?.size === 0) hashesById.delete(entry.principal.tokenId);
    }
  }

  /** The principal of a key that may be used, else its refusal. */
  function usablePrincipal(entry: CachedKey | null): ApiKeyPrincipal {
    if (!entry) throw new InvalidApiKeyError();
    if (entry.status !== 1) throw new InvalidApiKeyError('This API key has been disabled');
    if (isExpired(entry.principal.expiredTime)) throw new InvalidApiKeyError('This API key has expired');
    return entry.principal;
  }

  /** The cached entry of a key hash, unless it is older than the TTL. */
  function freshEntry(hashHex: string): CachedKey | undefined {
    const entry = byHash.get(hashHex);
    return entry && Date.now() - entry.loadedAt <= ttlMs ? entry : undefined;
  }

  function clear(): void {
    epoch++;
    inflight.clear();
    byHash.clear();
    hashesById.clear();
  }

  function lookup(rawKey: string): ApiKeyPrincipal | Promise<ApiKeyPrincipal> {
    const bare = bareKey(rawKey);
    if (!isBareKey(bare)) throw new InvalidApiKeyError();
    const hashHex = keyHashHex(bare);
    const entry = freshEntry(hashHex);
    return entry ? usablePrincipal(entry) : loadShared(hashHex).then(usablePrincipal);
  }

  return {
    async authenticate(rawKey) {
      return lookup(rawKey);
    },
    lookup,
    invalidate(tokenId) {
      epoch++;
      // A read in flight may predate the change: later requests must not join it.
      inflight.clear();
      const hashes = hashesById.get(tokenId);
      if (hashes === undefined) return;
      hashesById.delete(tokenId);
      for (const hashHex of hashes) byHash.delete(hashHex);
    },
    clear,
    setCaching(enabled) {
      if (caching === enabled) return;
      caching = enabled;
      clear();
    },
    size() {
      return byHash.size;
    },
  };
}
