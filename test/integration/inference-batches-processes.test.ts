import Anthropic from '@anthropic-ai/sdk';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { startSimulator, type Simulator } from '../../src/simulator';
import { http, TEST_SECRET, testEnv } from '../helpers/harness';
import { exitWithin, type GatewayProcess, runGateway, SHARED_DATABASE_BOOTSTRAP_TOKEN } from './runtime-process';

/**
 * Batches as deployed on PostgreSQL: two `gateway api` processes and a `gateway worker`, sharing the database,
 * Temporal and the file store. A batch created through one api is read through the other; an api process killed
 * mid-batch does not stop it (the worker runs the lines).
 */
const YAML = (url: string) => `channels:
  - {name: sim, type: openai, base_url: "${url}/v1", key: sim-key, models: [gpt-4o-mini]}
  - {name: sim-anthropic, type: anthropic, base_url: "${url}/v1", key: sim-key, models: [claude-sonnet-4]}
models:
  gpt-4o-mini: {input_per_1m: "0.15", output_per_1m: "0.6"}
  claude-sonnet-4: {input_per_1m: "3", output_per_1m: "15"}
`;

describe('batches on two api processes and a worker', () => {
  let sim: Simulator;
  let dir: string;
  const procs: GatewayProcess[] = [];
  let api1: string;
  let api2: string;
  let first: GatewayProcess;

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'sim-key', latencyMs: 30, maxRecords: 0 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'batch-processes-'));
    writeFileSync(path.join(dir, 'gateway.yaml'), YAML(sim.url));
    const env = testEnv();
    const common = {
      DATABASE_URL: env.databaseUrl,
      TEMPORAL_ADDRESS: env.temporalAddress,
      TEMPORAL_NAMESPACE: env.temporalNamespace,
      TEMPORAL_TASK_QUEUE: `batch-processes-${randomUUID()}`,
      GATEWAY_SECRET: TEST_SECRET,
      GATEWAY_CONFIG: path.join(dir, 'gateway.yaml'),
      VIDEO_STORE_URL: `file://${path.join(dir, 'store')}`,
      GATEWAY_BOOTSTRAP_TOKEN: SHARED_DATABASE_BOOTSTRAP_TOKEN,
    };
    const worker = runGateway(['worker'], common);
    first = runGateway(['api'], { ...common, PORT: '0' });
    const second = runGateway(['api'], { ...common, PORT: '0' });
    procs.push(worker, first, second);
    api1 = (await first.waitFor(/^ {2}Base URL:\s+(\S+)$/m))[1];
    api2 = (await second.waitFor(/^ {2}Base URL:\s+(\S+)$/m))[1];
    await worker.waitFor(/^AI gateway worker is running/m);
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) {
      p.child.kill('SIGTERM');
      await exitWithin(p, 20_000).catch(() => p.child.kill('SIGKILL'));
    }
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an OpenAI batch created on one api reads completed on the other, and survives the first api being killed', async () => {
    const made = await http(api1, 'POST', '/api/token/', { auth: SHARED_DATABASE_BOOTSTRAP_TOKEN, body: { name: `batch-processes-${randomUUID()}`, remain_quota: 10_000_000 } });
    const key = `sk-${made.body.data.key}`;
    const one = new OpenAI({ apiKey: key, baseURL: `${api1}/v1`, maxRetries: 0 });
    const two = new OpenAI({ apiKey: key, baseURL: `${api2}/v1`, maxRetries: 0 });
    const lines = Array.from({ length: 200 }, (_, i) =>
      JSON.stringify({ custom_id: `l${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `n ${i}` }] } }),
    );
    const file = await one.files.create({ file: await toFile(Buffer.from(lines.join('\n')), 'in.jsonl'), purpose: 'batch' });
    const created = await two.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });

    // The Anthropic API on the other api process, meanwhile.
    const anthropic = new Anthropic({ apiKey: key, baseURL: api2, maxRetries: 0 });
    const messages = await anthropic.messages.batches.create({
      requests: [{ custom_id: 'm1', params: { model: 'claude-sonnet-4', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] } }],
    });

    let b = await one.batches.retrieve(created.id);
    while (b.status === 'validating' || b.request_counts!.completed === 0) b = await one.batches.retrieve(created.id);
    expect(b.status).toBe('in_progress');
    first.child.kill('SIGKILL');
    await exitWithin(first, 10_000);

    for (let i = 0; i < 600 && b.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      b = await two.batches.retrieve(created.id);
    }
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 200, completed: 200, failed: 0 } });
    const out = (await (await two.files.content(b.output_file_id!)).text()).trim().split('\n');
    expect(new Set(out.map((l) => JSON.parse(l).custom_id)).size).toBe(200);

    let m = await anthropic.messages.batches.retrieve(messages.id);
    for (let i = 0; i < 300 && m.processing_status !== 'ended'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      m = await anthropic.messages.batches.retrieve(messages.id);
    }
    expect(m.request_counts.succeeded).toBe(1);
    const results = [];
    for await (const r of await anthropic.messages.batches.results(messages.id)) results.push(r);
    expect(results).toMatchObject([{ custom_id: 'm1', result: { type: 'succeeded', message: { type: 'message' } } }]);
  }, 120_000);
});
