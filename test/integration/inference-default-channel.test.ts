import { Pool } from 'pg';
import { buildApp } from '../../src/api/app';
import { createDeps } from '../../src/api/deps';
import { migrate } from '../../src/db/migrate';
import { createScratchDatabase, ScratchDatabase } from '../../src/db/scratch-database';
import { createPool } from '../../src/db/pool';
import { ensureDefaultChannel } from '../../src/domain/catalog';
import { SIMULATOR_MODELS } from '../../src/upstream/simulator-models';
import { http, newAccount, TEST_SECRET, testEnv } from '../helpers/harness';

/**
 * The built-in simulator channel on a database of its own (the shared test database has other
 * tests' channels): registered only into an empty channels table, once, even when many processes
 * start together, and then served by /v1/models.
 */
describe('inference: default simulator channel', () => {
  let scratch: ScratchDatabase;
  let url: string;
  let pools: Pool[] = [];

  beforeAll(async () => {
    scratch = await createScratchDatabase(testEnv().databaseUrl, 'gateway_catalog');
    url = scratch.url;
    await migrate(url);
    pools = Array.from({ length: 4 }, () => createPool(url, 3));
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await scratch.close();
  });

  it('answers an empty catalog with an empty list, then registers the simulator exactly once and serves its models', async () => {
    const deps = await createDeps({ db: pools[0], secret: TEST_SECRET });
    const app = await buildApp(deps, { logLevel: 'silent' });
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const acct = await newAccount(pools[0]);
      const record = await deps.tokens.create(acct.id, { remain_quota: 1 });
      const auth = `Bearer sk-${record.key}`;

      const empty = await http(baseUrl, 'GET', '/v1/models', { auth });
      expect(empty.status).toBe(200);
      expect(empty.body).toEqual({ object: 'list', data: [] });

      // Many processes starting at once: one insert wins, the others are no-ops.
      const results = await Promise.all(pools.flatMap((p) => [ensureDefaultChannel(p), ensureDefaultChannel(p)]));
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await ensureDefaultChannel(pools[0])).toBe(false);
      const rows = await pools[0].query('SELECT name, type, base_url, groups, status, models FROM channels');
      expect(rows.rows).toEqual([
        { name: 'simulator', type: 'simulator', base_url: 'builtin://simulator', groups: ['default'], status: 1, models: SIMULATOR_MODELS.map((m) => m.id) },
      ]);

      await deps.catalog.refresh();
      const { body } = await http(baseUrl, 'GET', '/v1/models', { auth });
      const expected = [...SIMULATOR_MODELS].sort((a, b) => (a.id < b.id ? -1 : 1));
      expect(body.data.map((m: { id: string }) => m.id)).toEqual(expected.map((m) => m.id));
      for (const [i, m] of expected.entries()) {
        expect(body.data[i]).toEqual({ id: m.id, object: 'model', created: expect.any(Number), owned_by: m.owned_by });
      }
      expect(Math.abs(body.data[0].created - Date.now() / 1000)).toBeLessThan(120);
    } finally {
      await app.close();
    }
  });

  it('leaves a configured catalog alone', async () => {
    await pools[0].query('DELETE FROM channels');
    await pools[0].query(`INSERT INTO channels (name, type, base_url, models) VALUES ('mine', 'openai', 'https://x', '{m}')`);
    expect(await ensureDefaultChannel(pools[0])).toBe(false);
    const rows = await pools[0].query('SELECT name FROM channels');
    expect(rows.rows).toEqual([{ name: 'mine' }]);
  });
});
