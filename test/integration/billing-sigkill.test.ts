import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { PoolClient } from 'pg';
import { sweepExpiredHolds } from '../../src/domain/billing/sweeper';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startGateway, TEST_SECRET, testEnv, type TestGateway } from '../helpers/harness';
import { newKey, relayConfig } from '../helpers/relay-fixture';
import { waitFor } from '../helpers/wait';
import { exitWithin, type GatewayProcess, removeTempDataDirs, runGateway, tempDataDir } from './runtime-process';

/**
 * A delivered answer is billed even when the api process dies right after delivering it: N calls answered, the
 * process SIGKILLed, exactly N ledger rows and used_quota = their sum; the credit leases it left are swept back, so
 * the key's balance adds up to what it started with. The settles are slowed by a lock on the key's row while the
 * calls run, which widens the window in which an answer could be out and its settle not yet committed.
 */
describe('billing: SIGKILL after the answers (PostgreSQL, gateway api process)', () => {
  let sim: Simulator;
  let setup: TestGateway;
  let api: GatewayProcess | null = null;
  const INITIAL = 50_000_000;

  beforeAll(async () => {
    // Requests recorded: the test waits for its calls to reach the upstream.
    sim = await startSimulator({ apiKey: 'sigkill-upstream-key' });
    setup = await startGateway({ config: ConfigStore.fixed(relayConfig(sim.url, sim.url)) });
  }, 60_000);

  afterAll(async () => {
    if (api && api.child.exitCode === null && api.child.signalCode === null) api.child.kill('SIGKILL');
    await setup?.close();
    await sim?.close();
    removeTempDataDirs();
  });

  function startApi(): GatewayProcess {
    const dir = tempDataDir();
    const configPath = path.join(dir, 'gateway.yaml');
    writeFileSync(
      configPath,
      [
        'channels:',
        `  - {name: main, type: openai, base_url: "${sim.url}/v1", key: "sigkill-upstream-key", models: [gpt-4o-mini]}`,
        'models:',
        '  gpt-4o-mini: {input_per_1m: 0.15, output_per_1m: 0.60}',
        '',
      ].join('\n'),
    );
    const env = testEnv();
    return runGateway(['api'], {
      DATABASE_URL: env.databaseUrl,
      TEMPORAL_ADDRESS: env.temporalAddress,
      TEMPORAL_NAMESPACE: env.temporalNamespace,
      TEMPORAL_TASK_QUEUE: `sigkill-${randomUUID()}`,
      GATEWAY_SECRET: TEST_SECRET,
      GATEWAY_CONFIG: configPath,
      PORT: '0',
    });
  }

  it('N answered calls, SIGKILL, restart: exactly N ledger rows, used_quota = ledger sum, balance whole', async () => {
    const { key, record } = await newKey(setup, { remain_quota: INITIAL });
    const id = record.id;
    api = startApi();
    const baseUrl = (await api.waitFor(/^ {2}Base URL:\s+(\S+)$/m, 60_000))[1];
    await api.waitFor(/Press Ctrl-C/, 60_000);

    const call = async (i: number) => {
      const res = await fetch(`${baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `call ${i}` }], max_tokens: 16 }),
      });
      const body = await res.text();
      expect({ status: res.status, body }).toMatchObject({ status: 200 });
      return res.headers.get('x-request-id')!;
    };
    // Warm up: the process takes its credit lease on the key.
    const answered: string[] = [];
    for (let i = 0; i < 3; i++) answered.push(await call(i));
    // Taken in the background: with it the next calls go upstream without touching the key's row.
    await waitFor(
      async () => (await setup.db.query("SELECT count(*)::int AS n FROM quota_holds WHERE token_id = $1 AND reason = 'lease'", [id])).rows[0].n > 0,
      { message: "the api process's credit lease on the key" },
    );

    // Settles need the key's row: hold it while 20 calls run.
    const lock: PoolClient = await setup.db.connect();
    await lock.query('BEGIN');
    await lock.query('SELECT id FROM tokens WHERE id = $1 FOR UPDATE', [id]);
    const lockPid: number = (await lock.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const inFlight = Array.from({ length: 20 }, (_, i) => call(100 + i).then((rid) => (answered.push(rid), rid)));
    // Every call has its upstream answer and a settle waits on the held row: an answer sent before its settle
    // committed would be out by now.
    await waitFor(
      async () =>
        sim.requests.filter((r) => /call 1\d\d/.test(JSON.stringify(r.body))).length === 20 &&
        (await setup.db.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [lockPid])).rows[0].n > 0,
      { timeoutMs: 10_000, message: 'the 20 calls to reach the upstream and a settle to wait on the held row' },
    );
    const answeredWhileLocked = answered.length - 3;
    if (answeredWhileLocked === 20) {
      // Every answer is out while no settle could commit: kill now, then let the database go on.
      api.child.kill('SIGKILL');
      await api.exited;
      await lock.query('COMMIT');
    } else {
      await lock.query('COMMIT');
      await Promise.all(inFlight);
      api.child.kill('SIGKILL');
      await api.exited;
    }
    lock.release();
    expect(answered).toHaveLength(23);

    // Whatever the killed process had in flight in PostgreSQL has finished: a row for every answer.
    const ledger = await waitFor(
      async () => {
        const rows = await setup.db.query<{ request_id: string; quota: number }>('SELECT request_id, quota FROM ledger WHERE token_id = $1', [id]);
        return rows.rows.length >= answered.length && rows;
      },
      { timeoutMs: 10_000, message: `a ledger row for each of the ${answered.length} answered calls` },
    );
    expect(ledger.rows.map((r) => r.request_id).sort()).toEqual([...answered].sort());
    const sum = ledger.rows.reduce((s, r) => s + r.quota, 0);
    const row = async () => (await setup.db.query<{ remain_quota: number; used_quota: number }>('SELECT remain_quota, used_quota FROM tokens WHERE id = $1', [id])).rows[0];
    expect((await row()).used_quota).toBe(sum);
    // Answers are withheld until billed.
    expect(answeredWhileLocked).toBe(0);

    // Restarted: the dead process's leases expire and are swept back; the balance adds up.
    await setup.db.query('UPDATE quota_holds SET expires_at = now() WHERE token_id = $1', [id]);
    await sweepExpiredHolds(setup.db);
    expect(await row()).toEqual({ remain_quota: INITIAL - sum, used_quota: sum });

    api = startApi();
    const again = (await api.waitFor(/^ {2}Base URL:\s+(\S+)$/m, 60_000))[1];
    await api.waitFor(/Press Ctrl-C/, 60_000);
    const res = await fetch(`${again}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'after restart' }], max_tokens: 16 }),
    });
    expect(res.status).toBe(200);
    api.child.kill('SIGTERM');
    await exitWithin(api, 20_000);
    const after = await setup.db.query<{ n: number; s: number }>('SELECT count(*)::int AS n, COALESCE(sum(quota), 0)::bigint AS s FROM ledger WHERE token_id = $1', [id]);
    expect(after.rows[0].n).toBe(24);
    expect(await row()).toEqual({ remain_quota: INITIAL - Number(after.rows[0].s), used_quota: Number(after.rows[0].s) });
  }, 120_000);
});
