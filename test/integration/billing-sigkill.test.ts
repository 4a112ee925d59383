import { randomUUID } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { PoolClient } from 'pg';
import { sweepExpiredHolds } from '../../src/domain/billing/sweeper';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startGateway, TEST_SECRET, testEnv, type TestGateway } from '../helpers/harness';
import { newKey, relayConfig } from '../helpers/relay-fixture';
import { waitFor } from '../helpers/wait';
import { exitWithin, type GatewayProcess, removeTempDataDirs, runGateway, tempDataDir } from './runtime-process';
import { createHoldRepository } from '../../src/db/repositories/holds';

/**
 * A delivered answer is billed even when the api process dies right after delivering it: N calls answered, the
 * process SIGKILLed, exactly N ledger rows and used_quota = their sum; the credit leases it left are swept back, so
 * the key's balance adds up to what it started with. The settles are held back by a lock on the key's row while the
 * calls run, which opens the window in which an answer is out and its settle not yet committed. Both ways the
 * gateway keeps that bill: with the settle journal (the default) the answers leave at once and the restarted
 * process replays the dead one's journal; without it (BILLING_JOURNAL_DIR=off) each answer waits for its commit.
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

  function startApi(dataDir: string, journal: boolean): GatewayProcess {
    const configPath = path.join(dataDir, 'gateway.yaml');
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
      DATA_DIR: dataDir,
      ...(journal ? {} : { BILLING_JOURNAL_DIR: 'off' }),
      PORT: '0',
    });
  }

  it.each([
    ['with the settle journal: answered at once, the journal replayed by the restarted process', true],
    ['without it: each answer waits for its commit', false],
  ])('N answered calls, SIGKILL, restart: exactly N ledger rows, used_quota = ledger sum, balance whole (%s)', async (_name, journal) => {
    const { key, record } = await newKey(setup, { remain_quota: INITIAL });
    const id = record.id;
    const tag = journal ? 'journaled' : 'committed';
    const dataDir = tempDataDir();
    api = startApi(dataDir, journal);
    const baseUrl = (await api.waitFor(/^ {2}Base URL:\s+(\S+)$/m, 60_000))[1];
    await api.waitFor(/Press Ctrl-C/, 60_000);

    const call = async (i: number) => {
      const res = await fetch(`${baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${tag} call ${i}` }], max_tokens: 16 }),
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
        sim.requests.filter((r) => new RegExp(`${tag} call 1\\d\\d`).test(JSON.stringify(r.body))).length === 20 &&
        (await setup.db.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [lockPid])).rows[0].n > 0 &&
        (!journal || answered.length === 23),
      { timeoutMs: 10_000, message: 'the 20 calls to reach the upstream, a settle to wait on the held row (and, journaled, every answer)' },
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
    // With the journal the answers did not wait for their settles; without it they did.
    expect(answeredWhileLocked).toBe(journal ? 20 : 0);

    const ledgerRows = async () => (await setup.db.query<{ request_id: string; quota: number }>('SELECT request_id, quota FROM ledger WHERE token_id = $1', [id])).rows;
    if (journal) {
      // Whatever the killed process had sent finishes; the settles it still held in memory are only in its journal.
      await new Promise((r) => setTimeout(r, 500));
      expect((await ledgerRows()).length).toBeLessThan(23);
      // The restarted process replays the journal before it serves.
      api = startApi(dataDir, journal);
      await api.waitFor(/Press Ctrl-C/, 60_000);
      expect(api.output()).toMatch(/settle journal: replayed \d+ settle/);
    }
    // A row for every answer, once.
    const ledger = await waitFor(async () => {
      const rows = await ledgerRows();
      return rows.length >= answered.length && rows;
    }, { timeoutMs: 10_000, message: `a ledger row for each of the ${answered.length} answered calls` });
    expect(ledger.map((r) => r.request_id).sort()).toEqual([...answered].sort());
    const sum = ledger.reduce((s, r) => s + r.quota, 0);
    const row = async () => (await setup.db.query<{ remain_quota: number; used_quota: number }>('SELECT remain_quota, used_quota FROM tokens WHERE id = $1', [id])).rows[0];
    expect((await row()).used_quota).toBe(sum);

    if (!journal) {
      api = startApi(dataDir, journal);
      await api.waitFor(/Press Ctrl-C/, 60_000);
    }
    const again = (api.output().match(/^ {2}Base URL:\s+(\S+)$/m) ?? [])[1];
    const res = await fetch(`${again}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'after restart' }], max_tokens: 16 }),
    });
    expect(res.status).toBe(200);
    api.child.kill('SIGTERM');
    await exitWithin(api, 20_000);
    // Its journal went with its last settle.
    if (journal) expect(readdirSync(path.join(dataDir, 'billing-journal')).filter((f) => f.endsWith('.jsonl'))).toEqual([]);

    // The dead process's lease expires and is swept back; the balance adds up.
    await setup.db.query('UPDATE quota_holds SET expires_at = now() WHERE token_id = $1', [id]);
    await sweepExpiredHolds(createHoldRepository(setup.db));
    const after = await setup.db.query<{ n: number; s: number }>('SELECT count(*)::int AS n, COALESCE(sum(quota), 0)::bigint AS s FROM ledger WHERE token_id = $1', [id]);
    expect(after.rows[0].n).toBe(24);
    expect(await row()).toEqual({ remain_quota: INITIAL - Number(after.rows[0].s), used_quota: Number(after.rows[0].s) });
  }, 120_000);
});
