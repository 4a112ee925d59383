import { Client, Connection } from '@temporalio/client';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createScratchDatabase } from '../../src/db/scratch-database';
import { startDevServer } from '../../src/temporal/dev-server';
import { startGatewayProcess, type GatewayChild } from '../lib/gateway-process';
import { callJson, ms, quantiles, timeLoop, rssMiB, startSimulatorProcess } from '../lib/probe';
import type { Scenario } from '../lib/types';

/**
 * Batch inference run by the gateway, as deployed (`gateway api` + `gateway worker` on PostgreSQL and Temporal): one
 * 50,000-line chat batch against the simulator at 20 ms latency (time to completed, lines/s, the worker's peak RSS,
 * the history's events per run), single chat calls timed meanwhile against the idle figure, then 100 batches of 100
 * lines submitted at once.
 */

const LINES = Number(process.env.BATCH_BENCH_LINES ?? 50_000);
const SMALL_BATCHES = 100;
const SMALL_LINES = 100;
const TOKEN = 'batch-bench-system-token-0123456789abcdef';
const LATENCY_MS = 20;



const lineOf = (i: number) =>
  JSON.stringify({ custom_id: `l-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `line ${i}` }], max_tokens: 8 } });

async function upload(base: string, key: string, lines: number, name: string): Promise<string> {
  const text = Array.from({ length: lines }, (_, i) => lineOf(i)).join('\n') + '\n';
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([text], { type: 'application/jsonl' }), name);
  const res = await fetch(`${base}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const json = (await res.json()) as { id: string };
  if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${JSON.stringify(json)}`);
  return json.id;
}

async function createBatch(base: string, key: string, fileId: string): Promise<string> {
  const r = await callJson(base, 'POST', '/v1/batches', `Bearer ${key}`, { input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' });
  if (r.status !== 200) throw new Error(`batch create answered ${r.status}: ${JSON.stringify(r.json)}`);
  return r.json.id as string;
}

async function untilEnded(base: string, key: string, id: string, everyMs: number): Promise<any> {
  for (;;) {
    const r = await callJson(base, 'GET', `/v1/batches/${id}`, `Bearer ${key}`);
    if (['completed', 'failed', 'expired', 'cancelled'].includes(r.json.status)) return r.json;
    await new Promise((res) => setTimeout(res, everyMs));
  }
}

export const batchScenario: Scenario = {
  name: 'batch',
  title: `Batch inference: ${LINES.toLocaleString('en')} chat lines run by the gateway (simulator at ${LATENCY_MS} ms), then ${SMALL_BATCHES} batches of ${SMALL_LINES} at once`,
  async run(ctx) {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'batch-bench-'));
    const database = await createScratchDatabase(ctx.databaseUrl, 'batch_bench');
    const sim = await startSimulatorProcess(undefined, ['--latency-ms', String(LATENCY_MS)]);
    const temporal = await startDevServer({ log: ctx.log });
    const queue = `batch-bench-${process.pid}-${Date.now()}`;
    const configFile = path.join(dataDir, 'gateway.yaml');
    writeFileSync(
      configFile,
      `channels:\n  - {name: sim, type: openai, base_url: "${sim.url}/v1", key: bench, models: [gpt-4o-mini]}\nmodels:\n  gpt-4o-mini: {input_per_1m: "0.15", output_per_1m: "0.6"}\n`,
    );
    const env: Record<string, string> = {
      DATABASE_URL: database.url,
      GATEWAY_SECRET: ctx.secret,
      GATEWAY_BOOTSTRAP_TOKEN: TOKEN,
      GATEWAY_CONFIG: configFile,
      DATA_DIR: dataDir,
      PORT: '0',
      TEMPORAL_TASK_QUEUE: queue,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
    };
    const procs: GatewayChild[] = [];
    const connection = await Connection.connect({ address: temporal.address });
    try {
      procs.push(startGatewayProcess('api', env), startGatewayProcess('worker', env));
      const base = (await procs[0].waitFor(/^ {2}Base URL:\s+(\S+)$/m))[1];
      await procs[1].waitFor(/^AI gateway worker is running/m);
      const workerPid = procs[1].child.pid!;
      const made = await callJson(base, 'POST', '/api/token/', TOKEN, { name: 'batch-bench', unlimited_quota: true });
      const key = `sk-${made.json.data.key}`;
      const chat = async () => {
        const r = await fetch(`${base}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 }),
        });
        if (r.status !== 200) throw new Error(`chat answered ${r.status}`);
        await r.arrayBuffer();
      };

      ctx.log('batch: warm-up batch of 200 lines, idle chat calls');
      await untilEnded(base, key, await createBatch(base, key, await upload(base, key, 200, 'warm.jsonl')), 200);
      for (let i = 0; i < 100; i++) await chat();
      let n = 0;
      const idle = quantiles(await timeLoop(chat, () => ++n > 500, 20));

      ctx.log(`batch: ${LINES.toLocaleString('en')} lines`);
      const fileId = await upload(base, key, LINES, 'big.jsonl');
      const rssBefore = rssMiB(workerPid)?.now ?? NaN;
      let running = true;
      let peak = 0;
      const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(workerPid)?.now ?? 0)), 250);
      const during = timeLoop(chat, () => !running, 20);
      const t0 = performance.now();
      const id = await createBatch(base, key, fileId);
      const big = await untilEnded(base, key, id, 500);
      const bigMs = performance.now() - t0;
      running = false;
      clearInterval(sampler);
      const busy = quantiles(await during);
      if (big.status !== 'completed' || big.request_counts.completed !== LINES) throw new Error(`the batch ended ${big.status}: ${JSON.stringify(big.request_counts)}`);
      const { Client: PgClient } = await import('pg');
      const pg = new PgClient({ connectionString: database.url });
      await pg.connect();
      const billed = await pg.query('SELECT count(*)::int AS n FROM ledger WHERE request_id LIKE $1', [`${id}:%`]).finally(() => pg.end());
      if (billed.rows[0].n !== LINES) throw new Error(`${billed.rows[0].n} ledger rows for ${LINES} lines`);
      const client = new Client({ connection, namespace: temporal.namespace });
      const handle = client.workflow.getHandle(`batch:${id}`);
      const runs: number[] = [];
      for (let runId: string | undefined = (await handle.describe()).runId; runId; ) {
        type Events = Array<{ workflowExecutionStartedEventAttributes?: { continuedExecutionRunId?: string | null } | null }>;
        const history: { events?: Events | null } = await client.workflow.getHandle(`batch:${id}`, runId).fetchHistory();
        const events: Events = history.events ?? [];
        runs.push(events.length);
        const previous: string | null | undefined = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
        runId = previous || undefined;
      }
      const historyMax = Math.max(...runs);

      ctx.log(`batch: ${SMALL_BATCHES} batches of ${SMALL_LINES} lines at once`);
      const files = await Promise.all(Array.from({ length: SMALL_BATCHES }, (_, i) => upload(base, key, SMALL_LINES, `small-${i}.jsonl`)));
      const s0 = performance.now();
      const ids = await Promise.all(files.map((f) => createBatch(base, key, f)));
      const ends = await Promise.all(ids.map((b) => untilEnded(base, key, b, 500)));
      const smallMs = performance.now() - s0;
      const allDone = ends.every((e) => e.status === 'completed' && e.request_counts.completed === SMALL_LINES);

      const rate = LINES / (bigMs / 1000);
      const met = bigMs < 120_000 && rate > 400 && peak < 400 && historyMax < 500 && busy.p99 <= 2 * idle.p99 && allDone;
      return {
        figures: [
          [`${LINES.toLocaleString('en')} lines: create to completed`, `${(bigMs / 1000).toFixed(1)} s, ${Math.round(rate)} lines/s (target < 120 s, > 400 lines/s)`],
          ['worker RSS before / peak during the batch', `${rssBefore.toFixed(0)} / ${peak.toFixed(0)} MiB (target < 400 MiB)`],
          ['history events per run (runs)', `${runs.join(', ')} (target < 500)`],
          ['single chat call idle: p50 / p99', `${ms(idle.p50)} / ${ms(idle.p99)} (${idle.n} calls)`],
          ['single chat call during the batch: p50 / p99', `${ms(busy.p50)} / ${ms(busy.p99)} (${busy.n} calls; ${(busy.p99 / idle.p99).toFixed(2)}x idle, target within 2x)`],
          [`${SMALL_BATCHES} batches of ${SMALL_LINES} lines created at once`, `${allDone ? 'all completed' : 'NOT all completed'} in ${(smallMs / 1000).toFixed(1)} s`],
          ['layout', `gateway api + gateway worker, BATCH_CONCURRENCY 64, simulator in its own process at ${LATENCY_MS} ms`],
        ],
        target: { description: `${LINES.toLocaleString('en')} lines in < 120 s (> 400 lines/s), worker RSS < 400 MiB, history < 500 events per run, single-call p99 within 2x idle; ${SMALL_BATCHES} batches of ${SMALL_LINES} all complete`, met },
      };
    } finally {
      for (const p of procs.reverse()) await p.stop();
      await connection.close().catch(() => undefined);
      await temporal.shutdown().catch(() => undefined);
      await sim.stop();
      await database.close().catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
};
