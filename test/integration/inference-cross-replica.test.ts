import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { createPool, inTransaction } from '../../src/db/pool';
import { InvalidApiKeyError } from '../../src/domain/errors';
import { createPgKeyChangeBus, PgKeyChangeBus } from '../../src/db/pg-key-change-bus';
import type { KeyAuthenticator } from '../../src/domain/keys/key-auth';
import type { KeyChange } from '../../src/domain/keys/key-change-bus';
import { http, newAccount, startGateway, testEnv, TestGateway } from '../helpers/harness';
import { txOf } from '../../src/db/repositories/queryable';

/**
 * Two api replicas (each its own pool and key cache) on one real Postgres, joined by LISTEN/NOTIFY:
 * a key change made through replica A is in force on replica B for the very next request.
 */
describe('inference: key changes across replicas', () => {
  let gwA: TestGateway;
  let gwB: TestGateway;

  // A channel of this file's own: other tests' replicas on the shared database never mix with these.
  const channel = `gw_test_${randomUUID().replace(/-/g, '').slice(0, 12)}`;

  beforeAll(async () => {
    const url = testEnv().databaseUrl;
    gwA = await startGateway({ keyChangeBus: createPgKeyChangeBus(url, { channel }) });
    // B reconnects after a second: long enough that a test's steps while it is deaf (a few queries) cannot race
    // its reconnect on a busy machine, short enough for the tests that wait for it.
    gwB = await startGateway({
      keyChangeBus: createPgKeyChangeBus(url, { channel, reconnectMinMs: 1000, reconnectMaxMs: 1000 }),
    });
  });
  afterAll(async () => {
    await gwA?.close();
    await gwB?.close();
  });

  const models = (gw: TestGateway, key: string) => http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` });

  it('disable, re-enable and delete on A are in force on B for the very next request', async () => {
    const acct = await newAccount(gwA.db);
    const record = await gwA.deps.tokens.create(acct.id, { remain_quota: 1000 });
    const key = `sk-${record.key}`;

    // Warm both caches: from here on B answers this key from memory.
    expect((await models(gwA, key)).status).toBe(200);
    expect((await models(gwB, key)).status).toBe(200);
    expect(gwB.deps.keyAuth.size()).toBeGreaterThan(0);

    await gwA.deps.tokens.setStatus(acct.id, record.id, 2);
    const disabled = await models(gwB, key);
    expect(disabled.status).toBe(401);
    expect(disabled.body.error.code).toBe('invalid_api_key');
    expect((await models(gwA, key)).status).toBe(401);

    await gwA.deps.tokens.setStatus(acct.id, record.id, 1);
    expect((await models(gwB, key)).status).toBe(200);
    expect((await models(gwA, key)).status).toBe(200);

    await gwA.deps.tokens.remove(acct.id, record.id);
    const deleted = await models(gwB, key);
    expect(deleted.status).toBe(401);
    expect(deleted.body.error.code).toBe('invalid_api_key');
  });

  it('holds for many keys changed back to back', async () => {
    const acct = await newAccount(gwA.db);
    const records = await Promise.all(
      Array.from({ length: 10 }, (_, i) => gwA.deps.tokens.create(acct.id, { name: `k${i}`, remain_quota: 1 })),
    );
    for (const r of records) expect((await models(gwB, `sk-${r.key}`)).status).toBe(200);
    for (const r of records) {
      await gwA.deps.tokens.setStatus(acct.id, r.id, 2);
      expect((await models(gwB, `sk-${r.key}`)).status).toBe(401);
    }
  });

  it('a bulk change (one transaction, many keys, one receipt) is in force on B for every key', async () => {
    const acct = await newAccount(gwA.db);
    const records = await Promise.all(
      Array.from({ length: 25 }, (_, i) => gwA.deps.tokens.create(acct.id, { name: `b${i}`, remain_quota: 1 })),
    );
    for (const r of records) expect((await models(gwB, `sk-${r.key}`)).status).toBe(200);
    const ids = records.map((r) => r.id);
    const change = await inTransaction(gwA.db, async (tx) => {
      await tx.query('UPDATE tokens SET status = 2 WHERE id = ANY($1::bigint[])', [ids]);
      return gwA.deps.keyChanges.publish(txOf(tx), ids);
    });
    expect(change.tokenIds).toEqual(ids);
    const started = Date.now();
    await gwA.deps.keyChanges.afterCommit(change);
    expect(Date.now() - started).toBeLessThan(1000);
    for (const r of records) expect((await models(gwB, `sk-${r.key}`)).status).toBe(401);
  });

  it('a disable racing another write of the same key is in force on B when it returns', async () => {
    // Two overlapping writes of one key in one process: each must wait for the confirmations of its own
    // notification (an earlier version let the first writer take the second one's and the second return at once).
    const acct = await newAccount(gwA.db);
    const record = await gwA.deps.tokens.create(acct.id, { remain_quota: 1000 });
    const key = `sk-${record.key}`;
    const rounds = 100;
    let served = 0;
    for (let i = 0; i < rounds; i++) {
      await gwB.deps.keyAuth.authenticate(key); // warm on B: from here B answers this key from memory
      // B keeps serving the key meanwhile, so it re-caches it after each invalidation that precedes the disable.
      let busy = true;
      const traffic = (async () => {
        while (busy) {
          await gwB.deps.keyAuth.authenticate(key).catch(() => undefined);
          await new Promise((r) => setImmediate(r));
        }
      })();
      const [, stillServed] = await Promise.all([
        gwA.deps.tokens.update(acct.id, record.id, { name: `r${i}`, remain_quota: 1000 }),
        gwA.deps.tokens.setStatus(acct.id, record.id, 2).then(() =>
          gwB.deps.keyAuth.authenticate(key).then(
            () => true,
            (err) => {
              expect(err).toBeInstanceOf(InvalidApiKeyError);
              return false;
            },
          ),
        ),
      ]);
      busy = false;
      await traffic;
      if (stillServed) served++;
      await gwA.deps.tokens.setStatus(acct.id, record.id, 1);
    }
    expect({ served, rounds }).toEqual({ served: 0, rounds });
  });

  it('a listening replica that never confirms delays the change by the bound, not forever', async () => {
    const acct = await newAccount(gwA.db);
    const record = await gwA.deps.tokens.create(acct.id, { remain_quota: 1 });
    const key = `sk-${record.key}`;
    expect((await models(gwB, key)).status).toBe(200);
    // Looks like a replica to the others (same channel and name prefix) but never answers.
    const mute = new Client({ connectionString: testEnv().databaseUrl, application_name: `gateway-keys:${channel}:mute` });
    await mute.connect();
    try {
      await mute.query(`LISTEN ${channel}`);
      const started = Date.now();
      await gwA.deps.tokens.setStatus(acct.id, record.id, 2);
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(1900);
      expect(took).toBeLessThan(4000);
      expect((await models(gwB, key)).status).toBe(401);
    } finally {
      await mute.end();
    }
  });

  it('a replica whose listener drops stops trusting its cache until it has reconnected', async () => {
    const acct = await newAccount(gwA.db);
    const record = await gwA.deps.tokens.create(acct.id, { remain_quota: 1000 });
    const key = `sk-${record.key}`;
    expect((await models(gwB, key)).status).toBe(200);
    const bus = gwB.deps.keyChanges as PgKeyChangeBus;
    expect(bus.listening()).toBe(true);

    const admin = new Client({ connectionString: testEnv().databaseUrl });
    await admin.connect();
    try {
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE '%:' || $1`,
        [bus.replicaId],
      );
      expect(killed.rowCount).toBe(1);
      await waitFor(() => !bus.listening() || gwB.deps.keyAuth.size() === 0);
      // A change B never hears about (it was not listening): it must still be in force on B.
      await admin.query('UPDATE tokens SET status = 2 WHERE id = $1', [record.id]);
      expect((await models(gwB, key)).status).toBe(401);
      await admin.query('UPDATE tokens SET status = 1 WHERE id = $1', [record.id]);
      expect((await models(gwB, key)).status).toBe(200);

      await waitFor(() => bus.listening());
      // Listening again: notifications are back in force.
      expect((await models(gwB, key)).status).toBe(200);
      await gwA.deps.tokens.setStatus(acct.id, record.id, 2);
      expect((await models(gwB, key)).status).toBe(401);
    } finally {
      await admin.end();
    }
  });
});

/**
 * The bus itself against a stand-in replica: a plain connection on the channel, named like a replica, whose
 * confirmations the test sends by hand.
 */
describe('pg key change bus: receipts', () => {
  const channel = `gw_test_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  let pool: Pool;
  let fake: Client;
  /** Nonces the stand-in replica received, by key id, in order. */
  const received = new Map<number, string[]>();

  const keyAuth = (): KeyAuthenticator & { invalidated: number[] } => {
    const invalidated: number[] = [];
    return {
      invalidated,
      authenticate: async () => {
        throw new Error('not used');
      },
      lookup: () => {
        throw new Error('not used');
      },
      invalidate: (id) => void invalidated.push(id),
      clear: () => undefined,
      setCaching: () => undefined,
      size: () => 0,
    };
  };
  const ack = (...nonces: string[]) => fake.query('SELECT pg_notify($1, $2)', [channel, `a:fake:${nonces.join(',')}`]);
  const commit = (id: number, bus: PgKeyChangeBus) => inTransaction(pool, (tx) => bus.publish(txOf(tx), id));
  /** Resolves to 'pending' if `p` has not settled within `ms`. */
  const within = (p: Promise<unknown>, ms: number) =>
    Promise.race([p.then(() => 'done'), new Promise((r) => setTimeout(() => r('pending'), ms))]);

  beforeAll(async () => {
    pool = createPool(testEnv().databaseUrl, 2);
    fake = new Client({ connectionString: testEnv().databaseUrl, application_name: `gateway-keys:${channel}:fake` });
    await fake.connect();
    fake.on('notification', (msg) => {
      const m = /^k:(\d+):(.+)$/.exec(msg.payload ?? '');
      if (!m) return;
      const list = received.get(Number(m[1])) ?? [];
      list.push(m[2]);
      received.set(Number(m[1]), list);
    });
    await fake.query(`LISTEN ${channel}`);
  });
  afterAll(async () => {
    await fake?.end();
    await pool?.end();
  });

  it('afterCommit of a receipt waits for the confirmations of its own notifications only', async () => {
    const auth = keyAuth();
    const bus = await createPgKeyChangeBus(testEnv().databaseUrl, { channel, syncTimeoutMs: 5000 })(auth);
    try {
      // Two writes of one key committed before either afterCommit: the overlap of two concurrent writers.
      const first: KeyChange = await commit(7001, bus);
      const second: KeyChange = await commit(7001, bus);
      expect(first.tokenIds).toEqual([7001]);
      await waitFor(() => (received.get(7001)?.length ?? 0) === 2);
      const [n1, n2] = received.get(7001)!;

      // The first writer's afterCommit runs first and must not take the second one's notification with it.
      auth.invalidated.length = 0; // (the bus's own listener dropped the key already)
      const started = Date.now();
      const p1 = bus.afterCommit(first);
      const p2 = bus.afterCommit(second);
      expect(auth.invalidated).toEqual([7001, 7001]);
      await ack(n1);
      await p1;
      expect(Date.now() - started).toBeLessThan(2000);
      // The stand-in replica has not confirmed the second change: its writer still waits.
      expect(await within(p2, 300)).toBe('pending');
      await ack(n2);
      await p2;
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await bus.close();
    }
  });

  it('a writer whose own listener drops keeps waiting to the bound instead of returning early', async () => {
    const messages: string[] = [];
    const bus = await createPgKeyChangeBus(testEnv().databaseUrl, {
      channel,
      syncTimeoutMs: 1500,
      // Stays down for the whole test once dropped.
      reconnectMinMs: 60_000,
      log: (m) => void messages.push(m),
    })(keyAuth());
    const admin = new Client({ connectionString: testEnv().databaseUrl });
    await admin.connect();
    try {
      const change = await commit(7002, bus);
      const started = Date.now();
      const waiting = bus.afterCommit(change);
      // Let it read the listening replicas (the stand-in has not confirmed), then drop the writer's listener.
      await new Promise((r) => setTimeout(r, 100));
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE '%:' || $1`, [
        bus.replicaId,
      ]);
      await waitFor(() => !bus.listening());
      expect(await within(waiting, 500)).toBe('pending');
      await waiting;
      expect(Date.now() - started).toBeGreaterThanOrEqual(1450);

      // A change made while the listener is down: its confirmations cannot be observed, so it waits the bound too.
      const down = await commit(7003, bus);
      const downStarted = Date.now();
      await bus.afterCommit(down);
      expect(Date.now() - downStarted).toBeGreaterThanOrEqual(1450);
      expect(messages.filter((m) => m.startsWith('key change not confirmed within 1500 ms'))).toHaveLength(2);
    } finally {
      await admin.end();
      await bus.close();
    }
  });
});

async function waitFor(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
