import type { Pool } from 'pg';
import { createKeyRepository } from '../../src/db/repositories/keys';
import { InvalidApiKeyError } from '../../src/domain/errors';
import { createKeyAuthenticator } from '../../src/domain/keys/key-auth';
import type { TokenAuthRow as Row } from '../../src/domain/ports/keys';
import { generateKeyMaterial, hashKey } from '../../src/domain/keys/key-material';


/** A pool stand-in: rows by key hash, a query counter, and an optional gate to hold reads in flight. */
function fakeDb(rows: Map<string, Row>) {
  const state = { queries: 0, gate: null as Promise<void> | null };
  const db = {
    async query(q: { values: [Buffer] }) {
      state.queries++;
      const hex = q.values[0].toString('hex');
      const snapshot = rows.get(hex);
      const copy = snapshot ? { ...snapshot } : undefined;
      if (state.gate) await state.gate;
      return { rows: copy ? [copy] : [] };
    },
  };
  return { db: db as unknown as Pool, state };
}

function row(id: number, over: Partial<Row> = {}): Row {
  return { id, user_id: 1, name: `k${id}`, group: '', models: '', status: 1, unlimited_quota: false, expired_time: -1, rpm_limit: 0, tpm_limit: 0, max_concurrency: 0, period_quota: 0, quota_period: null, ...over };
}

describe('key authenticator', () => {
  const key = generateKeyMaterial();
  const hex = hashKey(key).toString('hex');

  it('accepts the key with and without sk-, caches it, and rejects malformed keys without a query', async () => {
    const { db, state } = fakeDb(new Map([[hex, row(7, { models: 'a, b,,' })]]));
    const auth = createKeyAuthenticator(createKeyRepository(db));
    const p = await auth.authenticate(`sk-${key}`);
    expect(p).toEqual({ tokenId: 7, accountId: 1, name: 'k7', group: '', models: ['a', 'b'], unlimitedQuota: false, expiredTime: -1, rpmLimit: 0, tpmLimit: 0, maxConcurrency: 0, periodQuota: 0, quotaPeriod: null });
    expect(await auth.authenticate(key)).toBe(p);
    expect(state.queries).toBe(1);
    for (const bad of ['', 'sk-', 'sk-short', `sk-${key}x`, `sk-${key.slice(0, 47)}!`, 'x'.repeat(32)]) {
      await expect(auth.authenticate(bad)).rejects.toBeInstanceOf(InvalidApiKeyError);
    }
    expect(state.queries).toBe(1);
  });

  it('rejects unknown, disabled and expired keys', async () => {
    const expiredKey = generateKeyMaterial();
    const disabledKey = generateKeyMaterial();
    const rows = new Map([
      [hashKey(expiredKey).toString('hex'), row(1, { expired_time: Math.floor(Date.now() / 1000) - 1 })],
      [hashKey(disabledKey).toString('hex'), row(2, { status: 2 })],
    ]);
    const auth = createKeyAuthenticator(createKeyRepository(fakeDb(rows).db));
    await expect(auth.authenticate(`sk-${generateKeyMaterial()}`)).rejects.toThrow('Invalid API key');
    await expect(auth.authenticate(`sk-${expiredKey}`)).rejects.toThrow('expired');
    await expect(auth.authenticate(`sk-${disabledKey}`)).rejects.toThrow('disabled');
  });

  it('lookup answers at once from the cache (the principal or its refusal), and reads the database only on a miss', async () => {
    const disabledKey = generateKeyMaterial();
    const expiredKey = generateKeyMaterial();
    const rows = new Map([
      [hex, row(4)],
      [hashKey(disabledKey).toString('hex'), row(5, { status: 2 })],
      [hashKey(expiredKey).toString('hex'), row(6, { expired_time: Math.floor(Date.now() / 1000) - 1 })],
    ]);
    const { db, state } = fakeDb(rows);
    const auth = createKeyAuthenticator(createKeyRepository(db), { ttlMs: 50 });
    // Not cached yet: a promise, and one read.
    const first = auth.lookup(`sk-${key}`);
    expect(first).toBeInstanceOf(Promise);
    const principal = await first;
    expect(state.queries).toBe(1);
    // Cached: the principal itself, with or without sk-, and no read.
    expect(auth.lookup(`sk-${key}`)).toBe(principal);
    expect(auth.lookup(key)).toBe(principal);
    expect(state.queries).toBe(1);
    // Malformed: refused at once, without a read.
    for (const bad of ['', 'sk-', `sk-${key}x`]) expect(() => auth.lookup(bad)).toThrow(InvalidApiKeyError);
    expect(state.queries).toBe(1);
    // A cached key that is disabled or has expired: its refusal at once.
    await expect(auth.authenticate(disabledKey)).rejects.toThrow('disabled');
    expect(() => auth.lookup(disabledKey)).toThrow('disabled');
    await expect(auth.authenticate(expiredKey)).rejects.toThrow('expired');
    expect(() => auth.lookup(expiredKey)).toThrow('expired');
    expect(state.queries).toBe(3);
    // Dropped by a change, or older than the TTL: read again.
    auth.invalidate(4);
    expect(auth.lookup(key)).toBeInstanceOf(Promise);
    await new Promise((r) => setTimeout(r, 60));
    await expect(auth.lookup(key)).resolves.toMatchObject({ tokenId: 4 });
    expect(state.queries).toBe(5);
  });

  it('shares one database read between concurrent requests for a cold key', async () => {
    const { db, state } = fakeDb(new Map([[hex, row(1)]]));
    const auth = createKeyAuthenticator(createKeyRepository(db));
    await Promise.all(Array.from({ length: 50 }, () => auth.authenticate(key)));
    expect(state.queries).toBe(1);
  });

  it('invalidate drops the key, and a read in flight during the change is neither cached nor shared', async () => {
    const rows = new Map([[hex, row(3)]]);
    const { db, state } = fakeDb(rows);
    const auth = createKeyAuthenticator(createKeyRepository(db));
    await auth.authenticate(key);
    auth.invalidate(3);
    expect(auth.size()).toBe(0);

    // A read starts while the key is enabled...
    let open!: () => void;
    state.gate = new Promise((r) => (open = r));
    const early = auth.authenticate(key);
    await new Promise((r) => setImmediate(r));
    // ...the key is disabled and the change is announced before that read returns.
    rows.set(hex, row(3, { status: 2 }));
    auth.invalidate(3);
    const late = auth.authenticate(key);
    open();
    state.gate = null;
    await expect(early).resolves.toMatchObject({ tokenId: 3 });
    await expect(late).rejects.toThrow('disabled');
    // The stale read was not cached: the next call reads again and sees the change.
    await expect(auth.authenticate(key)).rejects.toThrow('disabled');
  });

  it('clear() drops everything; with caching off every call reads the database', async () => {
    const { db, state } = fakeDb(new Map([[hex, row(1)]]));
    const auth = createKeyAuthenticator(createKeyRepository(db));
    await auth.authenticate(key);
    auth.clear();
    expect(auth.size()).toBe(0);
    auth.setCaching(false);
    await auth.authenticate(key);
    await auth.authenticate(key);
    expect(auth.size()).toBe(0);
    expect(state.queries).toBe(3);
    auth.setCaching(true);
    await auth.authenticate(key);
    await auth.authenticate(key);
    expect(state.queries).toBe(4);
  });

  it('re-reads after the TTL', async () => {
    const { db, state } = fakeDb(new Map([[hex, row(1)]]));
    const auth = createKeyAuthenticator(createKeyRepository(db), { ttlMs: 20 });
    await auth.authenticate(key);
    await new Promise((r) => setTimeout(r, 30));
    await auth.authenticate(key);
    expect(state.queries).toBe(2);
  });

  it('invalidating a key drops every cached hash of it (a key whose material was rotated in place)', async () => {
    const oldKey = generateKeyMaterial();
    const newKey = generateKeyMaterial();
    const rows = new Map([
      [hashKey(oldKey).toString('hex'), row(9)],
      [hashKey(newKey).toString('hex'), row(9)],
    ]);
    const { db, state } = fakeDb(rows);
    const auth = createKeyAuthenticator(createKeyRepository(db));
    await auth.authenticate(oldKey);
    await auth.authenticate(newKey);
    expect(auth.size()).toBe(2);
    rows.delete(hashKey(oldKey).toString('hex'));
    auth.invalidate(9);
    expect(auth.size()).toBe(0);
    await expect(auth.authenticate(oldKey)).rejects.toThrow('Invalid API key');
    await auth.authenticate(newKey);
    expect(state.queries).toBe(4);
  });

  it('bounds the cache size', async () => {
    const keys = Array.from({ length: 25 }, () => generateKeyMaterial());
    const rows = new Map(keys.map((k, i) => [hashKey(k).toString('hex'), row(100 + i)]));
    const auth = createKeyAuthenticator(createKeyRepository(fakeDb(rows).db), { maxEntries: 10 });
    for (const k of keys) await auth.authenticate(k);
    expect(auth.size()).toBeLessThanOrEqual(10);
    // Evicted keys still authenticate (from the database).
    await expect(auth.authenticate(keys[0])).resolves.toMatchObject({ tokenId: 100 });
  });
});
