// test modes: postgres, embedded
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';
import { waitFor } from '../helpers/wait';

/**
 * The embedded database is one session behind a socket. Before the single-session pool, a second pool
 * connection (concurrent requests) or a replacement one (after the pool went idle) prepared the key lookup a
 * second time in that session: 500s with 42P05 until a restart. Runs in both jest projects; it is the
 * embedded one that used to fail.
 */
describe('the gateway on its database: concurrency, idle pool, session state', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // Idle connections are dropped after 150 ms, so the test sees replacement connections quickly.
    gw = await startGateway({ poolIdleTimeoutMillis: 150 });
  });
  afterAll(async () => {
    await gw.close();
  });

  async function freshKeys(n: number) {
    const acct = await newAccount(gw.db);
    const keys: Array<{ id: number; key: string }> = [];
    for (let i = 0; i < n; i++) {
      const record = await gw.deps.tokens.create(acct.id, { name: `k${i}`, remain_quota: 1000 });
      keys.push({ id: record.id, key: `sk-${record.key}` });
    }
    return { acct, keys };
  }

  const models = (key: string) => http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` });
  /** Once the pool has closed every idle connection, the next query runs on a replacement one. */
  const poolEmptied = () => waitFor(() => gw.db.totalCount === 0, { message: 'the pool to close its idle connections' });

  it('serves 8 concurrent requests with 8 never-used keys, then again after the pool went idle', async () => {
    for (let round = 0; round < 3; round++) {
      const { keys } = await freshKeys(8);
      const statuses = (await Promise.all(keys.map((k) => models(k.key)))).map((r) => r.status);
      expect(statuses).toEqual(Array(8).fill(200));
      await poolEmptied();
    }
  });

  it('answers 401 (not 500) for a key disabled after the pool went idle', async () => {
    const { acct, keys } = await freshKeys(2);
    expect((await models(keys[0].key)).status).toBe(200);
    await poolEmptied();
    const record = await http(gw.baseUrl, 'GET', `/api/token/${keys[0].id}`, { auth: acct.systemToken });
    const put = await http(gw.baseUrl, 'PUT', '/api/token/?status_only=true', {
      auth: acct.systemToken,
      body: { ...record.body.data, status: 2 },
    });
    expect(put.status).toBe(200);
    await poolEmptied();
    const res = await models(keys[0].key);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_api_key');
    expect((await models(keys[1].key)).status).toBe(200);
  });

  it('gives a replacement connection a clean session (no settings or statements left by the one before)', async () => {
    const first = await gw.db.connect();
    await first.query(`SET application_name = 'left-behind'`);
    await first.query({ name: 'probe-statement', text: 'SELECT 1 AS one' });
    // Destroy it instead of returning it: the pool opens a new connection for the next caller.
    first.release(true);
    const second = await gw.db.connect();
    try {
      const { rows } = await second.query(`SELECT current_setting('application_name') AS name`);
      expect(rows[0].name).not.toBe('left-behind');
      const again = await second.query({ name: 'probe-statement', text: 'SELECT 1 AS one' });
      expect(again.rows[0].one).toBe(1);
    } finally {
      second.release();
    }
  });

  it('keeps 100 concurrent management and inference requests at 0 server errors', async () => {
    const { acct, keys } = await freshKeys(4);
    const calls = Array.from({ length: 100 }, (_, i) =>
      i % 2 === 0
        ? models(keys[i % 4].key)
        : http(gw.baseUrl, 'POST', '/api/token/', { auth: acct.systemToken, body: { name: `c${i}`, remain_quota: 10 } }),
    );
    const statuses = (await Promise.all(calls)).map((r) => r.status);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(new Set(statuses)).toEqual(new Set([200]));
  });
});
