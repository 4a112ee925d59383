/**
 * 10,000 keys issued by one batch workflow (POST /api/token/batch, time until GET says completed) against
 * the same 10,000 keys as repeated single POST /api/token/ calls (one at a time, then 8 at a time).
 *
 * Topology of the workflow run, as in production: a Temporal dev server (its own process), a gateway
 * worker in its own process (forked from this file), PostgreSQL, and an api with a Temporal client in the
 * bench process (it only answers the POST and the progress polls). The single calls go to the bench's
 * api process (ctx.baseUrl), which writes to the same database.
 */
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { ChildProcess } from 'node:child_process';
import type { Pool } from 'pg';
import { buildApp } from '../../src/api/app';
import { createPool } from '../../src/db/pool';
import { createAccount } from '../../src/domain/accounts/accounts';
import { createRepositories } from '../../src/db/repositories';
import { DEFAULT_BATCH_SETTINGS } from '../../src/domain/keys/batches';
import { createServices, Services } from '../../src/runtime/services';
import { startDevServer } from '../../src/temporal/dev-server';
import { createGatewayWorker } from '../../src/worker/worker';
import type { BenchContext, Scenario, ScenarioResult } from '../lib/types';
import { forkWorker, stopChild } from '../lib/worker-fork';

const COUNT = 10_000;
const TARGET_MS = 10_000;
/** One rollout to every user of a platform: one batch of the largest size, once. */
const MILLION = 1_000_000;
const MILLION_TARGET_MS = 30_000;
const CONCURRENCY = 8;
/** Workflow runs measured; the median is the headline figure. */
const RUNS = 3;
const SECRET = 'key-batch-bench-secret-key-batch-bench-secret';
const WORKER_ROLE = 'KEY_BATCH_BENCH_WORKER';

interface Envelope<T> {
  success: boolean;
  message: string;
  data: T;
}

async function call<T>(baseUrl: string, auth: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = (await res.json()) as Envelope<T>;
  if (!res.ok || !parsed.success) throw new Error(`${method} ${path}: ${res.status} ${parsed.message}`);
  return parsed.data;
}

interface BatchView {
  id: number;
  status: string;
  created: number;
  requested: number;
}

/** POST one batch and poll (every 20 ms) until it is no longer running; returns the wall time. */
async function batchRun(baseUrl: string, auth: string, count: number, name: string): Promise<{ ms: number; batch: BatchView }> {
  const t0 = performance.now();
  const started = await call<BatchView>(baseUrl, auth, 'POST', '/api/token/batch', { count, name, remain_quota: 500_000 });
  for (;;) {
    const batch = await call<BatchView>(baseUrl, auth, 'GET', `/api/token/batch/${started.id}`);
    if (batch.status !== 'running') return { ms: performance.now() - t0, batch };
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `total` single POST /api/token/ calls, `concurrency` in flight at a time. */
async function singleCalls(baseUrl: string, auth: string, total: number, concurrency: number, prefix: string): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = ++next;
        await call(baseUrl, auth, 'POST', '/api/token/', { name: `${prefix}-${String(i).padStart(5, '0')}`, remain_quota: 500_000 });
      }
    }),
  );
  return performance.now() - t0;
}

async function newSystemToken(db: Pool, tag: string): Promise<{ id: number; token: string }> {
  const { account, systemToken } = await createAccount(createRepositories(db), { username: `bench_kb_${tag}_${process.pid}_${Date.now()}`, password: 'bench-password' });
  return { id: account.id, token: systemToken };
}

async function countKeys(db: Pool, sql: string, args: unknown[]): Promise<number> {
  return (await db.query<{ n: number }>(sql, args)).rows[0].n;
}

/** The worker process: the production createGatewayWorker, bundling the workflows at start. */
async function workerMain(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const db = createPool(process.env.DATABASE_URL!, 10);
  const services = await createServices({ db, secret: SECRET });
  const { worker, connection } = await createGatewayWorker({
    address: process.env.TEMPORAL_ADDRESS!,
    namespace: process.env.TEMPORAL_NAMESPACE!,
    taskQueue: process.env.TEMPORAL_TASK_QUEUE!,
    // Issuance changes no key's status, so the in-process bus (the default) is enough here.
    deps: services.activities,
  });
  const running = worker.run();
  process.send?.({ type: 'ready' });
  process.on('SIGTERM', () => worker.shutdown());
  await running;
  await connection.close();
  await services.close();
  await db.end();
}

const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const rate = (ms: number) => `${Math.round(COUNT / (ms / 1000))} keys/s`;

export const keyBatchScenario: Scenario = {
  name: 'key-batch',
  title: `${COUNT.toLocaleString('en')} keys: one batch workflow vs repeated single POST /api/token/`,
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const databaseUrl = (ctx.db as unknown as { options: { connectionString: string } }).options.connectionString;
    ctx.log('key-batch: starting a Temporal dev server');
    const temporal = await startDevServer({ log: ctx.log });
    const taskQueue = `bench-key-batch-${process.pid}`;
    const db = createPool(databaseUrl, 5);
    let worker: ChildProcess | null = null;
    let connection: Connection | null = null;
    let app: Awaited<ReturnType<typeof buildApp>> | null = null;
    let services: Services | null = null;
    try {
      ctx.log('key-batch: starting the worker process (bundles the workflows)');
      worker = await forkWorker(__filename, WORKER_ROLE, {
        DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace,
        TEMPORAL_TASK_QUEUE: taskQueue,
      });
      connection = await Connection.connect({ address: temporal.address });
      services = await createServices({
        db, secret: SECRET, temporal: { client: new Client({ connection, namespace: temporal.namespace }), taskQueue },
      });
      app = await buildApp(services.api, { logLevel: 'warn' });
      const batchApi = await app.listen({ port: 0, host: '127.0.0.1' });

      const a = await newSystemToken(db, 'wf');
      ctx.log('key-batch: warm-up batch of 500 keys');
      await batchRun(batchApi, a.token, 500, 'warm');
      const runs: Array<{ ms: number; serverMs: number }> = [];
      for (let r = 1; r <= RUNS; r++) {
        ctx.log(`key-batch: ${COUNT} keys through the workflow (run ${r} of ${RUNS})`);
        const run = await batchRun(batchApi, a.token, COUNT, `bench${r}`);
        if (run.batch.status !== 'completed' || run.batch.created !== COUNT) {
          throw new Error(`the batch ended ${run.batch.status} with ${run.batch.created} keys`);
        }
        const stored = await countKeys(db, 'SELECT count(DISTINCT batch_index)::int AS n FROM tokens WHERE batch_id = $1', [run.batch.id]);
        if (stored !== COUNT) throw new Error(`the batch stored ${stored} keys`);
        const serverSide = await db.query<{ ms: number }>(
          'SELECT (extract(epoch from finished_at - started_at) * 1000)::int AS ms FROM key_batches WHERE id = $1', [run.batch.id],
        );
        runs.push({ ms: run.ms, serverMs: serverSide.rows[0].ms });
        ctx.log(`key-batch: workflow ${secs(run.ms)}`);
      }
      const byTime = [...runs].sort((x, y) => x.ms - y.ms);
      const wf = byTime[Math.floor(byTime.length / 2)];

      ctx.log(`key-batch: ${MILLION.toLocaleString('en')} keys in one batch`);
      const big = await batchRun(batchApi, a.token, MILLION, 'million');
      if (big.batch.status !== 'completed' || big.batch.created !== MILLION) {
        throw new Error(`the million batch ended ${big.batch.status} with ${big.batch.created} keys`);
      }
      const bigStored = await countKeys(db, 'SELECT count(*)::int AS n FROM tokens WHERE batch_id = $1', [big.batch.id]);
      if (bigStored !== MILLION) throw new Error(`the million batch stored ${bigStored} keys`);
      ctx.log(`key-batch: ${MILLION} keys in ${secs(big.ms)}`);

      const b = await newSystemToken(db, 'single');
      await singleCalls(ctx.baseUrl, b.token, 200, 1, 'warm');
      ctx.log(`key-batch: ${COUNT} single POST /api/token/ calls, one at a time`);
      const sequential = await singleCalls(ctx.baseUrl, b.token, COUNT, 1, 'seq');
      ctx.log(`key-batch: sequential ${secs(sequential)}`);
      ctx.log(`key-batch: ${COUNT} single calls, ${CONCURRENCY} at a time`);
      const parallel = await singleCalls(ctx.baseUrl, b.token, COUNT, CONCURRENCY, 'par');
      ctx.log(`key-batch: ${CONCURRENCY} at a time ${secs(parallel)}`);
      const singles = await countKeys(db, 'SELECT count(*)::int AS n FROM tokens WHERE user_id = $1', [b.id]);
      if (singles !== 2 * COUNT + 200) throw new Error(`single calls stored ${singles} keys`);

      const met = byTime[byTime.length - 1].ms < TARGET_MS && big.ms < MILLION_TARGET_MS;
      return {
        figures: [
          ['Keys', COUNT.toLocaleString('en')],
          ['Workflow: POST to completed (median)', `${secs(wf.ms)} (${rate(wf.ms)})`],
          [`Workflow: all ${RUNS} runs`, runs.map((r) => secs(r.ms)).join(', ')],
          ['Workflow: started_at to finished_at (median run)', secs(wf.serverMs)],
          [`Workflow: ${MILLION.toLocaleString('en')} keys in one batch`, `${secs(big.ms)} (${Math.round(MILLION / (big.ms / 1000))} keys/s)`],
          ['Workflow chunking', `${DEFAULT_BATCH_SETTINGS.chunkSize} keys per activity, ${DEFAULT_BATCH_SETTINGS.parallelChunks} activities at once, continue-as-new every ${DEFAULT_BATCH_SETTINGS.continueAsNewAfterChunks} chunks (defaults)`],
          ['Single calls, sequential', `${secs(sequential)} (${rate(sequential)})`],
          [`Single calls, ${CONCURRENCY} concurrent`, `${secs(parallel)} (${rate(parallel)})`],
          ['Speed-up vs sequential', `${(sequential / wf.ms).toFixed(1)}x`],
          ['Speed-up vs concurrent', `${(parallel / wf.ms).toFixed(1)}x`],
        ],
        target: {
          description: `${COUNT.toLocaleString('en')} keys through the workflow in < ${TARGET_MS / 1000} s (every run); ${MILLION.toLocaleString('en')} in one batch in < ${MILLION_TARGET_MS / 1000} s`,
          met,
        },
        notes: [
          'Workflow: one POST /api/token/batch to an api with a Temporal client (in the bench process), a gateway worker in '
            + 'its own process (createGatewayWorker, the production worker), a Temporal dev server (SQLite, in memory) and the '
            + 'PostgreSQL above; timed from sending the POST until GET /api/token/batch/{id} (polled every 20 ms) reads '
            + `\`completed\`, after a warm-up batch of 500 keys; ${RUNS} runs. Every key was checked in the database afterwards.`,
          'Single calls: POST /api/token/ to the bench api process (one key per call, audit event per call, as the spec '
            + 'describes batch issuance without this feature), after 200 warm-up calls; first strictly one after another, then '
            + `${CONCURRENCY} requests in flight at a time. Both write to the same database.`,
          'Each worker chunk is one transaction: keys generated (CSPRNG, SHA-256, AES-256-GCM) and written by one INSERT from '
            + 'one array per column, plus the progress counter; one Temporal activity per chunk, several chunks at once.',
        ],
      };
    } finally {
      if (app) await app.close();
      if (services) await services.close();
      if (worker) await stopChild(worker);
      if (connection) await connection.close();
      await db.end();
      await temporal.shutdown().catch(() => undefined);
    }
  },
};

if (require.main === module && process.env[WORKER_ROLE] === '1') {
  workerMain().catch((err) => {
    process.stderr.write(`key-batch bench worker: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
