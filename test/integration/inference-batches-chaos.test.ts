import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { ConfigStore } from '../../src/gateway-config/store';
import { createLocalObjectStore } from '../../src/stores/local-store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startGateway, type TestGateway } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { batchHistory } from '../helpers/batch-histories';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process';

/**
 * A batch's worker process SIGKILLed mid-run, then a new one: the batch completes, every custom_id is in the output
 * exactly once, every line billed exactly once, and the upstream saw a line twice only when it was in flight at the
 * kill. The workflow's history stays small: line state lives in PostgreSQL.
 */
const YAML = `channels:
  - {name: sim, type: openai, base_url: "http://127.0.0.1:9100/v1", key: "\${SIM_KEY}", models: [gpt-4o-mini]}
models:
  gpt-4o-mini: {input_per_1m: "0.15", output_per_1m: "0.6"}
`;
const LINES = 300;
const CONCURRENCY = 16;

describe('chaos: the worker running a batch is killed', () => {
  let sim: Simulator;
  let gw: TestGateway;
  let dir: string;
  let configFile: string;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'sim-key', latencyMs: 60, maxRecords: 5000 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'batch-chaos-'));
    configFile = path.join(dir, 'gateway.yaml');
    writeFileSync(configFile, YAML.split('http://127.0.0.1:9100').join(sim.url));
    gw = await startGateway({
      taskQueue: `batch-chaos-${randomUUID()}`,
      config: ConfigStore.fromFile(configFile, { SIM_KEY: 'sim-key' }),
      inferenceBatches: { heartbeatTimeoutMs: 3000 },
      // Shared with the worker processes, as DATA_DIR or VIDEO_STORE_URL is in a deployment.
      videoStore: createLocalObjectStore(path.join(dir, 'store')),
    });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill('SIGKILL');
    await gw?.close();
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const spawn = async () => {
    const w = await spawnWorkerProcess({ taskQueue: gw.taskQueue, env: { WORKER_STORE_DIR: path.join(dir, 'store'), WORKER_GATEWAY_CONFIG: configFile, SIM_KEY: 'sim-key', BATCH_CONCURRENCY: String(CONCURRENCY) } });
    workers.push(w);
    return w;
  };

  it('SIGKILL mid-batch; a new worker completes it, each line once in the output and billed once', async () => {
    const first = await spawn();
    const { key, record } = await newKey(gw);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.baseUrl}/v1`, maxRetries: 0 });
    const text = Array.from({ length: LINES }, (_, i) =>
      JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `chaos line ${i}` }] } }),
    ).join('\n');
    const file = await client.files.create({ file: await toFile(Buffer.from(text), 'chaos.jsonl'), purpose: 'batch' });
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });

    let b = await client.batches.retrieve(created.id);
    for (let i = 0; i < 600 && b.request_counts!.completed < 60; i++) {
      await new Promise((r) => setTimeout(r, 50));
      b = await client.batches.retrieve(created.id);
    }
    expect(b).toMatchObject({ status: 'in_progress' });
    await first.kill('SIGKILL');
    const atKill = (await client.batches.retrieve(created.id)).request_counts!.completed;
    expect(atKill).toBeLessThan(LINES);
    await spawn();

    for (let i = 0; i < 1200 && b.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      b = await client.batches.retrieve(created.id);
    }
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: LINES, completed: LINES, failed: 0 } });

    const output = (await (await client.files.content(b.output_file_id!)).text()).trim().split('\n').map((l) => JSON.parse(l));
    expect(output).toHaveLength(LINES);
    expect(new Set(output.map((l) => l.custom_id)).size).toBe(LINES);

    const ledger = await gw.db.query(`SELECT count(*)::int AS n, COALESCE(sum(quota), 0)::bigint AS s FROM ledger WHERE request_id LIKE $1`, [`${created.id}:%`]);
    expect(ledger.rows[0].n).toBe(LINES);
    const used = (await gw.db.query('SELECT used_quota FROM tokens WHERE id = $1', [record.id])).rows[0].used_quota;
    expect(Number(used)).toBe(Number(ledger.rows[0].s));
    expect(b.usage!.input_tokens).toBeGreaterThan(0);

    // The upstream saw a line twice only when it was in flight at the kill: at most the lines in flight then.
    const seen = new Map<string, number>();
    for (const r of sim.requests) {
      const content = (r.body as { messages?: { content?: string }[] })?.messages?.[0]?.content;
      if (content?.startsWith('chaos line ')) seen.set(content, (seen.get(content) ?? 0) + 1);
    }
    expect(seen.size).toBe(LINES);
    const twice = [...seen.values()].filter((n) => n > 1);
    expect(twice.every((n) => n === 2)).toBe(true);
    expect(twice.length).toBeLessThanOrEqual(CONCURRENCY);

    // Line state lives in PostgreSQL: the workflow's history stays small.
    const history = await gw.temporal.workflow.getHandle(`batch:${created.id}`).fetchHistory();
    expect(history.events!.length).toBeLessThan(500);
    await gw.temporal.workflow.getHandle(`batch:${created.id}`).result();
    expect(await batchHistory(gw.temporal, created.id, 'batch-crashed-resumed')).toContain('activity Heartbeat timeout');
  });
});
