import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { http, startGateway, TEST_SECRET, testEnv, type TestGateway } from '../helpers/harness';
import { holdsOf, ledgerOf, newKey, relayConfig, tokenRow } from '../helpers/relay-fixture';
import { exitWithin, type GatewayProcess, removeTempDataDirs, runGateway, tempDataDir } from './runtime-process';

/**
 * Issue 7 §6: the concurrency guarantees hold across api processes, as operators deploy them. Two `gateway api`
 * processes (spawned as `npm run start:api` runs them) share one real PostgreSQL and a GATEWAY_CONFIG whose
 * channel is an upstream simulator of this test; 200 simultaneous calls are spread over both.
 */
describe.each([
  ['two api processes on one PostgreSQL', 'replicas'],
  ['one `gateway api --processes 2` (a process group on one port)', 'group'],
] as const)('relay: %s', (_title, layout) => {
  let sim: Simulator;
  let setup: TestGateway;
  const apis: GatewayProcess[] = [];
  const baseUrls: string[] = [];
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'two processes, one quota' }], max_tokens: 20 };

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'two-process-upstream-key', maxRecords: 0 });
    sim.setOptions({ latencyMs: 20 });
    // The test's own gateway only creates accounts and keys, on the same database and channel config.
    setup = await startGateway({ config: ConfigStore.fixed(relayConfig(sim.url, sim.url)) });

    const dir = tempDataDir();
    const configPath = path.join(dir, 'gateway.yaml');
    writeFileSync(
      configPath,
      [
        'channels:',
        `  - {name: main, type: openai, base_url: "${sim.url}/v1", key: "\${UPSTREAM_KEY}", models: [gpt-4o-mini]}`,
        'models:',
        '  gpt-4o-mini: {input_per_1m: 0.15, output_per_1m: 0.60}',
        '',
      ].join('\n'),
    );
    const env = testEnv();
    const common = {
      DATABASE_URL: env.databaseUrl,
      TEMPORAL_ADDRESS: env.temporalAddress,
      TEMPORAL_NAMESPACE: env.temporalNamespace,
      TEMPORAL_TASK_QUEUE: `two-process-${randomUUID()}`,
      GATEWAY_SECRET: TEST_SECRET,
      GATEWAY_CONFIG: configPath,
      UPSTREAM_KEY: 'two-process-upstream-key',
      PORT: '0',
    };
    if (layout === 'replicas') for (let i = 0; i < 2; i++) apis.push(runGateway(['api'], common));
    // One port: the client's connections (one per call in flight) are handed to the two processes in turn.
    else apis.push(runGateway(['api', '--processes', '2'], common));
    for (const api of apis) baseUrls.push((await api.waitFor(/^ {2}Base URL:\s+(\S+)$/m, 60_000))[1]);
    for (const api of apis) await api.waitFor(/Press Ctrl-C/, 60_000);
  }, 120_000);

  afterAll(async () => {
    for (const api of apis) api.child.kill('SIGTERM');
    for (const api of apis) await exitWithin(api, 20_000);
    await setup?.close();
    await sim?.close();
    removeTempDataDirs();
  });

  const call = (i: number, key: string) =>
    http(baseUrls[i % baseUrls.length], 'POST', '/v1/chat/completions', { auth: `Bearer ${key}`, body });

  /** Settling may finish after the response: wait (bounded) until no hold of the key is left. */
  async function settled(tokenId: number) {
    for (let i = 0; i < 100 && (await holdsOf(setup, tokenId)) > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await holdsOf(setup, tokenId)).toBe(0);
  }

  async function costOfOneCall(): Promise<number> {
    const probe = await newKey(setup);
    expect((await call(0, probe.key)).status).toBe(200);
    await settled(probe.record.id);
    const [row] = await ledgerOf(setup, probe.record.id);
    expect(row.quota).toBeGreaterThan(0);
    return row.quota;
  }

  it('200 at once on a key whose quota covers 50: never overspent, used_quota equals the ledger sum', async () => {
    const perCall = await costOfOneCall();
    const quota = 50 * perCall;
    const { key, record } = await newKey(setup, { remain_quota: quota });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => call(i, key)));
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    for (const r of results) if (r.status === 429) expect(r.body.error.code).toBe('insufficient_quota');
    // Both processes answered; which of them wins the quota is a race (one process's credit lease may take all of
    // it), and the guarantee is only that together they never overspend.
    const served = [0, 1].map((p) => results.filter((r, i) => i % 2 === p && r.status === 200).length);
    expect(served[0] + served[1]).toBeGreaterThan(0);

    await settled(record.id);
    const rows = await ledgerOf(setup, record.id);
    const sum = rows.reduce((s, r) => s + r.quota, 0);
    const t = await tokenRow(setup, record.id);
    expect(rows).toHaveLength(served[0] + served[1]);
    expect(new Set(rows.map((r) => r.request_id)).size).toBe(rows.length);
    expect(t.used_quota).toBe(sum);
    expect(sum).toBeLessThanOrEqual(quota);
    expect(t.remain_quota).toBeGreaterThanOrEqual(0);
    expect(t.remain_quota + t.used_quota).toBe(quota);
  });

  it('an account wallet covering 40 calls, spent through two unlimited keys on two processes: never overspent', async () => {
    const perCall = await costOfOneCall();
    const wallet = 40 * perCall;
    const a = await newKey(setup, { unlimited_quota: true });
    const b = await setup.deps.tokens.create(a.acct.id, { unlimited_quota: true, name: 'second' });
    await setup.db.query('UPDATE accounts SET quota = $2 WHERE id = $1', [a.acct.id, wallet]);
    const keys = [a.key, `sk-${b.key}`];
    const results = await Promise.all(Array.from({ length: 160 }, (_, i) => call(i, keys[Math.floor(i / 2) % 2])));
    expect(results.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    const served = results.filter((r) => r.status === 200).length;
    expect(served).toBeGreaterThan(0);

    await settled(a.record.id);
    await settled(b.id);
    const rows = [...(await ledgerOf(setup, a.record.id)), ...(await ledgerOf(setup, b.id))];
    const sum = rows.reduce((s, r) => s + r.quota, 0);
    expect(rows).toHaveLength(served);
    const acct = await setup.db.query('SELECT quota, used_quota FROM accounts WHERE id = $1', [a.acct.id]);
    expect(Number(acct.rows[0].used_quota)).toBe(sum);
    expect(sum).toBeLessThanOrEqual(wallet);
    expect(Number(acct.rows[0].quota)).toBeGreaterThanOrEqual(0);
    expect(Number(acct.rows[0].quota) + sum).toBe(wallet);
  });
  it('rpm_limit 60 on two processes: of 200 requests at once exactly 60 pass, the rest are 429 and never billed', async () => {
    const { key, record } = await newKey(setup);
    await setup.deps.tokens.update(record.user_id, record.id, { name: 'rpm-two', remain_quota: 10_000_000, rpm_limit: 60 });
    // All 200 inside one minute of the processes' clocks.
    const msLeft = 60_000 - (Date.now() % 60_000);
    if (msLeft < 20_000) await new Promise((r) => setTimeout(r, msLeft + 100));
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => call(i, key)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(60);
    const limited = results.filter((r) => r.status === 429);
    expect(limited).toHaveLength(140);
    expect(limited.every((r) => r.body.error.code === 'rate_limit_exceeded' && Number(r.headers.get('retry-after')) > 0)).toBe(true);
    await settled(record.id);
    expect(await ledgerOf(setup, record.id)).toHaveLength(60);
  });

  it('max_concurrency 3 on two processes: of 12 slow streams at once exactly 3 run; when they end, 3 more may', async () => {
    const { key, record } = await newKey(setup);
    await setup.deps.tokens.update(record.user_id, record.id, { name: 'conc-two', remain_quota: 10_000_000, max_concurrency: 3 });
    sim.setOptions({ latencyMs: 20, chunkDelayMs: 100, streamChunks: 8 });
    try {
      const stream = (i: number) =>
        fetch(`${baseUrls[i % baseUrls.length]}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ ...body, stream: true }),
        });
      const first = await Promise.all(Array.from({ length: 12 }, (_, i) => stream(i)));
      expect(first.filter((r) => r.status === 200)).toHaveLength(3);
      expect(first.filter((r) => r.status === 429)).toHaveLength(9);
      await Promise.all(first.map((r) => r.text()));
      // Each process gives its slot back as its stream closes; then the next three run.
      let next: Response[] = [];
      for (let attempt = 0; attempt < 50; attempt++) {
        next = await Promise.all(Array.from({ length: 3 }, (_, i) => stream(i)));
        if (next.every((r) => r.status === 200)) break;
        await Promise.all(next.map((r) => r.text()));
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(next.map((r) => r.status)).toEqual([200, 200, 200]);
      await Promise.all(next.map((r) => r.text()));
    } finally {
      sim.setOptions({ latencyMs: 20, chunkDelayMs: 0, streamChunks: 5 });
    }
  });
});
