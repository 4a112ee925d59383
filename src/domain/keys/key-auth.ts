import type { Pool } from 'pg';
import { InvalidApiKeyError } from '../errors';
import { hashKey, KEY_LENGTH, KEY_PREFIX } from './key-material';

/** What an authenticated API key may do; never carries key material. */
export interface ApiKeyPrincipal {
  tokenId: number;
  accountId: number;
  name: string;
  group: string;
  /** Allowlist of model ids; empty means no restriction. */
  models: string[];
  unlimitedQuota: boolean;
  expiredTime: number;
}

interface CachedKey {
  principal: ApiKeyPrincipal;
  status: number;
  loadedAt: number;
}

export interface KeyAuthenticator {
  authenticate(rawKey: string): Promise<ApiKeyPrincipal>;
  /** Drops one key from this replica's cache. */
  invalidate(tokenId: number): void;
  /** Drops every cached key (used when change notifications may have been missed). */
  clear(): void;
}

const BARE_KEY = new RegExp(`^[A-Za-z0-9]{${KEY_LENGTH}}$`);

/**
 * Looks keys up by SHA-256 and keeps them in a per-replica cache. The cache never outlives a change
 * notification (see docs/decisions.md); the TTL only bounds the damage of a lost notification channel.
 */
export function createKeyAuthenticator(db: Pool, opts: { ttlMs?: number } = {}): KeyAuthenticator {
  const ttlMs = opts.ttlMs ?? 60_000;
  const byHash = new Map<string, CachedKey>();
  const hashById = new Map<number, string>();

  async function load(hashHex: string, hash: Buffer): Promise<CachedKey | null> {
    const res = await db.query<{
      id: number; user_id: number; name: string; group: string; models: string; status: number;
      unlimited_quota: boolean; expired_time: number;
    }>(
      `SELECT id, user_id, name, "group", models, status, unlimited_quota, expired_time FROM tokens WHERE key_hash = $1`,
      [hash],
    );
    const row = res.rows[0];
    if (!row) return null;
    const entry: CachedKey = {
      status: row.status,
      loadedAt: Date.now(),
      principal: {
        tokenId: row.id,
        accountId: row.user_id,
        name: row.name,
        group: row.group,
        models: row.models.split(',').map((m) => m.trim()).filter(Boolean),
        unlimitedQuota: row.unlimited_quota,
        expiredTime: row.expired_time,
      },
    };
    byHash.set(hashHex, entry);
    hashById.set(row.id, hashHex);
    return entry;
  }

  return {
    async authenticate(rawKey) {
      const bare = rawKey.startsWith(KEY_PREFIX) ? rawKey.slice(KEY_PREFIX.length) : rawKey;
      if (!BARE_KEY.test(bare)) throw new InvalidApiKeyError();
      const hash = hashKey(bare);
      const hashHex = hash.toString('hex');
      let entry = byHash.get(hashHex);
      if (!entry || Date.now() - entry.loadedAt > ttlMs) entry = (await load(hashHex, hash)) ?? undefined;
      if (!entry) throw new InvalidApiKeyError();
      if (entry.status !== 1) throw new InvalidApiKeyError('This API key has been disabled');
      const { expiredTime } = entry.principal;
      if (expiredTime !== -1 && expiredTime * 1000 <= Date.now()) throw new InvalidApiKeyError('This API key has expired');
      return entry.principal;
    },
    invalidate(tokenId) {
      const hashHex = hashById.get(tokenId);
      if (hashHex === undefined) return;
      hashById.delete(tokenId);
      byHash.delete(hashHex);
    },
    clear() {
      byHash.clear();
      hashById.clear();
    },
  };
}
