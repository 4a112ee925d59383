import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { inTransaction } from '../../src/db/pool';
import { createPgKeyChangeBus, PgKeyChangeBus } from '../../src/domain/keys/pg-key-change-bus';
import { http, newAccount, startGateway, testEnv, TestGateway } from '../helpers/harness';

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
    gwB = await startGateway({
      keyChangeBus: createPgKeyChangeBus(url, { channel, reconnectMinMs: 50, reconnectMaxMs: 200 }),
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

  it('a bulk change (one transaction, many keys, concurrent afterCommit) is in force on B for every key', async () => {
    const acct = await newAccount(gwA.db);
    const records = await Promise.all(
      Array.from({ length: 25 }, (_, i) => gwA.deps.tokens.create(acct.id, { name: `b${i}`, remain_quota: 1 })),
    );
    for (const r of records) expect((await models(gwB, `sk-${r.key}`)).status).toBe(200);
    const ids = records.map((r) => r.id);
    await inTransaction(gwA.db, async (tx) => {
      await tx.query('UPDATE tokens SET status = 2 WHERE id = ANY($1::bigint[])', [ids]);
      await gwA.deps.keyChanges.publish(tx, ids);
    });
    const started = Date.now();
    await Promise.all(ids.map((id) => gwA.deps.keyChanges.afterCommit(id)));
    expect(Date.now() - started).toBeLessThan(1000);
    for (const r of records) expect((await models(gwB, `sk-${r.key}`)).status).toBe(401);
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

async function waitFor(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
