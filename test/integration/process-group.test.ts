import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { PoolClient } from 'pg';
import { sweepExpiredHolds } from '../../src/domain/billing/sweeper';
import { createHoldRepository } from '../../src/db/repositories/holds';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startGateway, TEST_SECRET, testEnv, type TestGateway } from '../helpers/harness';
import { newKey, relayConfig } from '../helpers/relay-fixture';
import { waitFor } from '../helpers/wait';
import { exitWithin, type GatewayProcess, removeTempDataDirs, runGateway, tempDataDir } from './runtime-process';

const METRICS_TOKEN = 'process-group-metrics-token';
const UPSTREAM_KEY = 'process-group-upstream-key';

/** A streamed chat call on a connection of its own (a new one: the group's primary hands connections out in turn). */
function openStream(baseUrl: string, key: string, content: string) {
  let text = '';
  let first: () => void = () => {};
  const firstChunk = new Promise<void>((r) => (first = r));
  const done = new Promise<{ ok: boolean; text: string; requestId: string }>((resolve) => {
    const req = http.request(`${baseUrl}/v1/chat/completions`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      const requestId = String(res.headers['x-request-id']);
      res.on('data', (c: Buffer) => {
        text += c.toString();
        first();
      });
      res.on('end', () => resolve({ ok: text.includes('data: [DONE]'), text, requestId }));
      res.on('error', () => resolve({ ok: false, text, requestId }));
      res.on('aborted', () => resolve({ ok: false, text, requestId }));
    });
    req.on('error', () => resolve({ ok: false, text, requestId: '' }));
    req.end(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 40, stream: true }));
  });
  return { firstChunk, done };
}

/** Children of a process (the group's members), by /proc. */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Issue 48: one `gateway api --processes 2` serves from two processes on one port, with billing exact across them:
 * the group's banner and memory, /metrics and /readyz answered for the whole group by whichever process a request
 * reaches, SIGHUP reloading every process, a member SIGKILLed mid-stream replaced and its journaled settles billed
 * once, SIGTERM draining a stream in flight, and a crash loop stopping the group with a clear error.
 */
describe('process group: gateway api --processes 2 on PostgreSQL', () => {
  let sim: Simulator;
  let setup: TestGateway;
  let group: GatewayProcess | null = null;
  let dataDir: string;
  let configPath: string;
  let baseUrl: string;
  let primaryPid: number;
  const env = testEnv();

  const writeConfig = (models: string[]) =>
    writeFileSync(
      configPath,
      [
        'channels:',
        `  - {name: main, type: openai, base_url: "${sim.url}/v1", key: "${UPSTREAM_KEY}", models: [${models.join(', ')}]}`,
        'models:',
        ...models.map((m) => `  ${m}: {input_per_1m: 0.15, output_per_1m: 0.60}`),
        '',
      ].join('\n'),
    );

  const startGroup = (extra: Record<string, string> = {}) =>
    runGateway(['api', '--processes', '2'], {
      DATABASE_URL: env.databaseUrl,
      TEMPORAL_ADDRESS: env.temporalAddress,
      TEMPORAL_NAMESPACE: env.temporalNamespace,
      TEMPORAL_TASK_QUEUE: `group-${randomUUID()}`,
      GATEWAY_SECRET: TEST_SECRET,
      GATEWAY_CONFIG: configPath,
      DATA_DIR: dataDir,
      METRICS_TOKEN,
      PORT: '0',
      ...extra,
    });

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: UPSTREAM_KEY });
    setup = await startGateway({ config: ConfigStore.fixed(relayConfig(sim.url, sim.url)) });
    dataDir = tempDataDir();
    configPath = path.join(dataDir, 'gateway.yaml');
    writeConfig(['gpt-4o-mini']);
    group = startGroup();
    await group.waitFor(/Press Ctrl-C/, 90_000);
    baseUrl = group.output().match(/^ {2}Base URL:\s+(\S+)$/m)![1];
    primaryPid = Number(group.output().match(/primary (\d+)/)![1]);
  }, 120_000);

  afterAll(async () => {
    if (group && group.child.exitCode === null && group.child.signalCode === null) {
      group.child.kill('SIGTERM');
      await exitWithin(group, 60_000).catch(() => undefined);
    }
    await setup?.close();
    await sim?.close();
    removeTempDataDirs();
  });

  const chat = async (key: string, content: string) => {
    const res = await fetch(`${baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 16 }),
    });
    const body = await res.text();
    expect({ status: res.status, body }).toMatchObject({ status: 200 });
    return res.headers.get('x-request-id')!;
  };

  /** GET on a new connection each time, so that successive calls reach both processes. */
  const getFresh = (p: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      http
        .get(`${baseUrl}${p}`, { agent: false, headers }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        })
        .on('error', reject);
    });

  it('says in its banner how many processes serve, their pids and memory; logs name the process', () => {
    const out = group!.output();
    const [, pids] = out.match(/^ {2}Processes:\s+2 on one port \(GATEWAY_PROCESSES=2\), pids (\d+, \d+); primary (\d+)$/m)!;
    expect(pids.split(', ').map(Number).sort()).toEqual(childrenOf(primaryPid).sort());
    expect(out).toMatch(/^ {2}Memory:\s+RSS \d+ \+ \d+ MiB, \d+ MiB in all with the primary$/m);
    expect(out).toMatch(new RegExp(`^ {2}Reload:\\s+kill -HUP ${primaryPid} `, 'm'));
    // One banner, not one per process.
    expect(out.match(/AI gateway is ready/g)).toHaveLength(1);
  });

  it('/metrics counts the whole group whichever process answers; /readyz is ready when both are', async () => {
    const { key } = await newKey(setup, { remain_quota: 50_000_000 });
    const count = async () => {
      const res = await getFresh('/metrics', { authorization: `Bearer ${METRICS_TOKEN}` });
      expect(res.status).toBe(200);
      const m = res.body.match(/^gateway_http_request_duration_seconds_count\{family="openai",status="200",model="gpt-4o-mini"\} (\d+)$/m);
      return { n: m ? Number(m[1]) : 0, body: res.body };
    };
    const before = (await count()).n;
    await Promise.all(Array.from({ length: 12 }, (_, i) => chat(key, `metrics ${i}`)));
    // Four scrapes on four new connections: both processes answer, each for all 12 calls.
    for (let i = 0; i < 4; i++) {
      const { n, body } = await count();
      expect(n - before).toBe(12);
      expect(body).toMatch(/^gateway_processes\{state="serving"\} 2$/m);
      expect(body).toMatch(/^gateway_process_restarts_total 0$/m);
    }
    for (let i = 0; i < 2; i++) {
      const r = await getFresh('/readyz');
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body).checks).toMatchObject({ database: 'ok', temporal: 'ok', processes: 'ok' });
    }
  }, 60_000);

  it('SIGHUP to the primary reloads the config in every process', async () => {
    writeConfig(['gpt-4o-mini', 'gpt-4.1-nano']);
    const before = group!.output().match(/gateway config reloaded/g)?.length ?? 0;
    process.kill(primaryPid, 'SIGHUP');
    await waitFor(() => (group!.output().match(/gateway config reloaded/g)?.length ?? 0) >= before + 2, { message: 'both processes to reload' });
    const { key } = await newKey(setup, { remain_quota: 50_000_000 });
    for (let i = 0; i < 4; i++) {
      const r = await getFresh('/v1/models', { authorization: `Bearer ${key}` });
      expect(JSON.parse(r.body).data.map((m: { id: string }) => m.id)).toContain('gpt-4.1-nano');
    }
    expect(group!.child.exitCode).toBeNull();
  }, 60_000);

  it('a process SIGKILLed mid-stream is replaced; every answer is billed once, the cut streams never; the balance adds up', async () => {
    const INITIAL = 50_000_000;
    const { key, record } = await newKey(setup, { remain_quota: INITIAL });
    const id = record.id;
    const answered: string[] = [];
    for (let i = 0; i < 4; i++) answered.push(await chat(key, `warm ${i}`));
    // Streams slow enough to be running when a process dies: one per new connection, two on each process.
    sim.setOptions({ chunkDelayMs: 300 });
    const streams = [];
    for (let i = 0; i < 4; i++) {
      const s = openStream(baseUrl, key, `stream ${i}`);
      await s.firstChunk;
      streams.push(s);
    }
    sim.setOptions({ chunkDelayMs: 0 });
    // Settles need the key's row: hold it while 20 calls run, so they are answered (journaled) but not committed.
    const lock: PoolClient = await setup.db.connect();
    await lock.query('BEGIN');
    await lock.query('SELECT id FROM tokens WHERE id = $1 FOR UPDATE', [id]);
    const calls = Array.from({ length: 20 }, (_, i) => chat(key, `locked ${i}`).then((rid) => (answered.push(rid), rid)));
    await Promise.all(calls);
    const [victim] = childrenOf(primaryPid);
    process.kill(victim, 'SIGKILL');
    await lock.query('COMMIT');
    lock.release();
    const ends = await Promise.all(streams.map((s) => s.done));
    const completed = ends.filter((e) => e.ok);
    // Two streams were on the process that died, two on the one that lived.
    expect(completed).toHaveLength(2);
    answered.push(...completed.map((e) => e.requestId));

    // The primary replaces it; the new process replays the dead one's journal before it serves.
    await group!.waitFor(new RegExp(`process \\d \\(pid ${victim}\\) exited unexpectedly \\(signal SIGKILL\\)`), 10_000);
    await waitFor(() => childrenOf(primaryPid).length === 2 && /settle journal: replayed \d+ settle/.test(group!.output()), {
      timeoutMs: 60_000,
      message: 'a new process, having replayed the journal',
    });
    const ledger = await waitFor(
      async () => {
        const rows = (await setup.db.query<{ request_id: string; quota: number }>('SELECT request_id, quota FROM ledger WHERE token_id = $1', [id])).rows;
        return rows.length >= answered.length && rows;
      },
      { timeoutMs: 20_000, message: `a ledger row for each of the ${answered.length} answers` },
    );
    expect(ledger.map((r) => r.request_id).sort()).toEqual([...answered].sort());
    const sum = ledger.reduce((s, r) => s + r.quota, 0);
    const row = async () => (await setup.db.query<{ remain_quota: number; used_quota: number }>('SELECT remain_quota, used_quota FROM tokens WHERE id = $1', [id])).rows[0];
    expect((await row()).used_quota).toBe(sum);

    const metrics = await getFresh('/metrics', { authorization: `Bearer ${METRICS_TOKEN}` });
    expect(metrics.body).toMatch(/^gateway_process_restarts_total 1$/m);
    await waitFor(async () => JSON.parse((await getFresh('/readyz')).body).checks.processes === 'ok', { message: 'the group ready again' });

    // The dead process's lease expires and is swept back: the balance is what it was less what was billed.
    await setup.db.query('UPDATE quota_holds SET expires_at = now() WHERE token_id = $1', [id]);
    await sweepExpiredHolds(createHoldRepository(setup.db));
    const after = await setup.db.query<{ n: number; s: string }>('SELECT count(*)::int AS n, COALESCE(sum(quota), 0)::bigint AS s FROM ledger WHERE token_id = $1', [id]);
    const billed = Number(after.rows[0].s);
    // The other process still holds its lease: give it back by stopping the group below, then compare.
    expect(after.rows[0].n).toBe(answered.length);
    expect(billed).toBe(sum);
  }, 120_000);

  it('SIGTERM drains every process: a stream in flight finishes, then the group exits 0', async () => {
    const { key, record } = await newKey(setup, { remain_quota: 50_000_000 });
    sim.setOptions({ chunkDelayMs: 200 });
    const s = openStream(baseUrl, key, 'drain');
    await s.firstChunk;
    sim.setOptions({ chunkDelayMs: 0 });
    group!.child.kill('SIGTERM');
    const end = await s.done;
    expect(end.ok).toBe(true);
    expect((await exitWithin(group!, 60_000)).code).toBe(0);
    expect(group!.output()).toMatch(/Stopping the group of 2 processes \(SIGTERM\)/);
    // Every process gave its leases back and flushed its settles: the stream is billed, no hold is left.
    const rows = await setup.db.query('SELECT request_id FROM ledger WHERE token_id = $1', [record.id]);
    expect(rows.rows.map((r) => r.request_id)).toEqual([end.requestId]);
    expect((await setup.db.query('SELECT count(*)::int AS n FROM quota_holds WHERE token_id = $1', [record.id])).rows[0].n).toBe(0);
  }, 90_000);

  it('gateway start --processes 2 on PostgreSQL: process 0 runs the api and the worker, process 1 the api', async () => {
    const start = runGateway(['start', '--processes', '2'], {
      DATABASE_URL: env.databaseUrl,
      TEMPORAL_ADDRESS: env.temporalAddress,
      TEMPORAL_NAMESPACE: env.temporalNamespace,
      TEMPORAL_TASK_QUEUE: `group-start-${randomUUID()}`,
      GATEWAY_SECRET: TEST_SECRET,
      GATEWAY_CONFIG: configPath,
      DATA_DIR: tempDataDir(),
      PORT: '0',
    });
    try {
      await start.waitFor(/Press Ctrl-C/, 90_000);
      expect(start.output()).toMatch(/^AI gateway is ready \(api \+ worker\)$/m);
      expect(start.output()).toMatch(/^ {2}Processes:\s+2 on one port/m);
      const url = start.output().match(/^ {2}Base URL:\s+(\S+)$/m)![1];
      const ready = await (await fetch(`${url}/readyz`)).json();
      expect(ready.checks).toMatchObject({ database: 'ok', temporal: 'ok', processes: 'ok' });
    } finally {
      start.child.kill('SIGTERM');
      expect((await exitWithin(start, 60_000)).code).toBe(0);
    }
  }, 120_000);

  it('a first start that fails (a database nobody serves) stops the group at once with its error', async () => {
    const bad = startGroup({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    const { code } = await exitWithin(bad, 60_000);
    expect(code).toBe(1);
    expect(bad.output()).toMatch(/process 0 \(pid \d+\) stopped before it served/);
    expect(bad.output()).not.toMatch(/starting a new one/);
  }, 90_000);

  it('members whose primary is killed drain and exit', async () => {
    const orphaned = startGroup();
    await orphaned.waitFor(/Press Ctrl-C/, 90_000);
    const primary = Number(orphaned.output().match(/primary (\d+)/)![1]);
    const members = childrenOf(primary);
    expect(members).toHaveLength(2);
    process.kill(primary, 'SIGKILL');
    await waitFor(() => members.every((pid) => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }), { timeoutMs: 40_000, message: 'the members of a killed primary to exit' });
  }, 120_000);

  it('a crash loop stops the group with a clear error instead of spinning', async () => {
    group = startGroup();
    await group.waitFor(/Press Ctrl-C/, 90_000);
    const primary = Number(group.output().match(/primary (\d+)/)![1]);
    const exited = exitWithin(group, 90_000);
    let running = true;
    void exited.then(() => (running = false));
    while (running) {
      for (const pid of childrenOf(primary)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    expect((await exited).code).toBe(1);
    expect(group.output()).toMatch(/crash loop: 5 processes exited within 60 s/);
  }, 120_000);
});
