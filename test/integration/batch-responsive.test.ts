import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { http, TEST_SECRET, testEnv } from '../helpers/harness';
import { waitFor } from '../helpers/wait';
import { exitWithin, runGateway, SHARED_DATABASE_BOOTSTRAP_TOKEN } from './runtime-process';

/**
 * A 100,000-key rollout in the process that also answers requests (`gateway start` on PostgreSQL, compiled, as
 * `npm start` runs it): the keys are made on threads of their own and written on connections of their own, so a
 * management call made meanwhile is answered in under a second; the batch completes, and leaves the table vacuumed
 * for the list that follows.
 */
const KEYS = 100_000;

describe('a large key batch and the requests of the same process', () => {
  it('answers management calls in under a second while a 100,000-key batch runs, then lists its keys', async () => {
    const env = testEnv();
    const token = SHARED_DATABASE_BOOTSTRAP_TOKEN;
    const gw = runGateway(
      ['start'],
      {
        DATABASE_URL: env.databaseUrl,
        TEMPORAL_ADDRESS: env.temporalAddress,
        TEMPORAL_NAMESPACE: env.temporalNamespace,
        TEMPORAL_TASK_QUEUE: `responsive-${randomUUID()}`,
        GATEWAY_SECRET: TEST_SECRET,
        GATEWAY_BOOTSTRAP_TOKEN: token,
        PORT: '0',
      },
      {},
    );
    try {
      const baseUrl = (await gw.waitFor(/^ {2}Base URL:\s+(\S+)$/m))[1];
      const name = `responsive-${randomUUID().slice(0, 8)}`;
      const started = await http(baseUrl, 'POST', '/api/token/batch', { auth: token, body: { count: KEYS, name, remain_quota: 1000 } });
      expect(started.status).toBe(202);
      const id = started.body.data.id as number;

      const answered: number[] = [];
      let status = 'running';
      let created = 0;
      const deadline = Date.now() + 120_000;
      while (status === 'running' && Date.now() < deadline) {
        const t0 = performance.now();
        const list = await http(baseUrl, 'GET', '/api/token/?page_size=10', { auth: token });
        answered.push(performance.now() - t0);
        expect(list.status).toBe(200);
        const batch = await http(baseUrl, 'GET', `/api/token/batch/${id}`, { auth: token });
        ({ status, created } = batch.body.data);
      }
      expect({ status, created }).toEqual({ status: 'completed', created: KEYS });
      // Calls were made all along the rollout, and none waited behind it.
      expect(answered.length).toBeGreaterThan(3);
      expect(Math.max(...answered)).toBeLessThan(1_000);

      const page = await http(baseUrl, 'GET', `/api/token/?page_size=100&keyword=${name}-0004`, { auth: token });
      expect(page.status).toBe(200);
      expect(page.body.data.map((k: { name: string }) => k.name)).toContain(`${name}-00042`);
      // A large batch vacuums the keys table before it completes, or leaves it to another large batch still writing
      // in the same database (another test's), which does it when it ends.
      const db = new Client({ connectionString: env.databaseUrl });
      await db.connect();
      try {
        const vacuumed = await waitFor(
          async () => (await db.query("SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = 'tokens'")).rows[0].last_vacuum,
          { timeoutMs: 120_000, intervalMs: 500, message: 'a VACUUM of the keys table' },
        );
        expect(vacuumed).not.toBeNull();
      } finally {
        await db.end();
      }
    } finally {
      gw.child.kill('SIGTERM');
      await exitWithin(gw, 30_000);
    }
  }, 180_000);
});
