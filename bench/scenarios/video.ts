/**
 * Video tasks: submit latency at 50 connections, and 5,000 tasks in flight at once on one worker (its own process,
 * production poll intervals) all reaching a terminal state, each within 12 s (p99) of its upstream's end; history
 * events per task; the worker's CPU time and RSS. Topology: a Temporal dev server and the upstream simulator in the bench process, an api process
 * with a Temporal client (bench/server.ts), the gateway worker forked from this file, PostgreSQL.
 */
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPool } from '../../src/db/pool';
import { listenForVideoSubmits } from '../../src/db/video-submit-listener';
import { createAccount } from '../../src/domain/accounts/accounts';
import { createRepositories } from '../../src/db/repositories';
import { ConfigStore } from '../../src/gateway-config/store';
import { createServices, type Services } from '../../src/runtime/services';
import { startDevServer } from '../../src/temporal/dev-server';
import { videoWorkflowId } from '../../src/temporal/video-starter';
import { startSimulator } from '../../src/simulator';
import { createGatewayWorker } from '../../src/worker/worker';
import { lowerProcessPriority } from '../../src/runtime/priority';
import { tuneHeapGrowth, WORKER_HEAP_GROWING_PERCENT } from '../../src/runtime/heap';
import { runLoad } from '../lib/load';
import { pin, rssMiB } from '../lib/probe';
import { type BenchServer, startBenchServer } from '../lib/server-process';
import type { BenchContext, Scenario, ScenarioResult } from '../lib/types';
import { forkWorker, stopChild } from '../lib/worker-fork';

const SECRET = 'video-bench-secret-video-bench-secret-0123';
const WORKER_ROLE = 'VIDEO_BENCH_WORKER';
const VIDEO_KEY = 'video-bench-upstream-key';
const TASKS = Number(process.env.VIDEO_BENCH_TASKS ?? 5000);
/** Worker processes sharing the task queue (VIDEO_BENCH_WORKERS): what each added worker carries. */
const WORKERS = Math.max(1, Number(process.env.VIDEO_BENCH_WORKERS ?? 1));
/** Upstream generation time: long enough that every task is in flight at once. */
const GENERATION_MS = 150_000;
/** A task reads finished at most this long after its upstream finished (p99), and the worker stays under this RSS. */
const LAG_P99_TARGET_MS = 12_000;
const RSS_TARGET_MIB = 400;
/** History events per task before waiting moved into one activity. */
const EVENTS_BEFORE = 61;
const SUBMIT_P99_TARGET_MS = 50;
const API_CPU = '0';
function otherCpus(): string {
  const n = os.cpus().length;
  return n > 1 ? `1-${n - 1}` : '0';
}
/** Submits of the latency phase (after SUBMIT_WARMUP unmeasured ones), 50 at a time: about 5 s. */
// VIDEO_BENCH_TASKS and VIDEO_BENCH_SUBMITS shrink a run for profiling (BENCH_CPU_PROF); figures quoted use the defaults.
const SUBMITS = Number(process.env.VIDEO_BENCH_SUBMITS ?? 10_000);
const SUBMIT_WARMUP = Math.min(500, SUBMITS);
/**
 * The worker and the Temporal server are background work on the cores the api's database also runs on: at nice 19
 * they take what the api's answers leave (WORKER_NICE; docs/decisions/0035-worker-priority.md).
 */
const WORKER_NICE = 19;

const yaml = (url: string) => `channels:
  - {name: va, type: video-a, base_url: ${url}, key: "\${VIDEO_KEY}", models: [video-3.1, video-3.1-fast]}
models:
  video-3.1: {per_unit: 0.5}
  video-3.1-fast: {per_unit: 0.25}
`;

async function workerMain(): Promise<void> {
  // As `gateway worker` with WORKER_NICE=19 does, first, so every thread it starts inherits it.
  lowerProcessPriority(WORKER_NICE);
  // As `gateway worker` does at start (src/runtime/heap.ts).
  tuneHeapGrowth(WORKER_HEAP_GROWING_PERCENT);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const db = createPool(process.env.DATABASE_URL!, 20);
  // As `gateway worker` runs: a Temporal client and an outbox that starts the api's submits, told by NOTIFY.
  const clientConnection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const temporal = { client: new Client({ connection: clientConnection, namespace: process.env.TEMPORAL_NAMESPACE! }), taskQueue: process.env.TEMPORAL_TASK_QUEUE! };
  const services = await createServices({
    db,
    secret: SECRET,
    temporal,
    gatewayConfig: ConfigStore.fromFile(process.env.BENCH_GATEWAY_CONFIG!, process.env),
    video: { outbox: { graceMs: 0 } },
  });
  const outbox = services.videoOutbox!;
  const listener = await listenForVideoSubmits(process.env.DATABASE_URL!, temporal.taskQueue, () => outbox.reconcileSoon(), (l) => process.stderr.write(`${l}\n`));
  const { worker, connection } = await createGatewayWorker({
    address: process.env.TEMPORAL_ADDRESS!,
    namespace: process.env.TEMPORAL_NAMESPACE!,
    taskQueue: process.env.TEMPORAL_TASK_QUEUE!,
    deps: services.activities,
  });
  const running = worker.run();
  // BENCH_MEM_LOG=<file>: the worker's memory every 2 s (resident, V8 heap, off-heap), to see where a peak goes.
  if (process.env.BENCH_MEM_LOG) {
    const t0 = Date.now();
    setInterval(() => {
      const m = process.memoryUsage();
      const mb = (n: number) => Math.round(n / 1048576);
      appendFileSync(process.env.BENCH_MEM_LOG!, `${process.pid} ${Math.round((Date.now() - t0) / 1000)} s rss=${mb(m.rss)} heapTotal=${mb(m.heapTotal)} heapUsed=${mb(m.heapUsed)} external=${mb(m.external)}\n`);
    }, 2000).unref();
  }
  process.send?.({ type: 'ready' });
  // How many tasks this worker is waiting on, for the bench to see how they spread over the workers.
  setInterval(() => process.send?.({ type: 'parked', n: services.activities.video.parkedActivities?.size ?? 0 }), 500).unref();
  process.on('SIGTERM', () => worker.shutdown());
  await running;
  await listener.close();
  await connection.close();
  await services.close();
  await clientConnection.close();
  await db.end();
}

/** User + system CPU seconds of a process so far (Linux /proc). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export const videoScenario: Scenario = {
  name: 'video',
  title: `Video tasks: submit latency at 50 connections; ${TASKS.toLocaleString('en')} tasks in flight on ${WORKERS === 1 ? 'one worker' : `${WORKERS} workers`}`,
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const databaseUrl = ctx.databaseUrl;
    const temporal = await startDevServer({ log: ctx.log });
    const sim = await startSimulator({ apiKey: VIDEO_KEY, videoGenerationMs: GENERATION_MS, maxRecords: 0 });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'video-bench-'));
    const configFile = path.join(dir, 'gateway.yaml');
    writeFileSync(configFile, yaml(sim.url));
    const taskQueue = `bench-video-${process.pid}`;
    const db = createPool(databaseUrl, 10);
    const workers: ChildProcess[] = [];
    let connection: Connection | null = null;
    let services: Services | null = null;
    let apiServer: BenchServer | null = null;
    try {
      ctx.log(`video: starting ${WORKERS} worker process(es)`);
      for (let w = 0; w < WORKERS; w++) {
        workers.push(
          await forkWorker(__filename, WORKER_ROLE, {
            DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace,
            TEMPORAL_TASK_QUEUE: taskQueue, BENCH_GATEWAY_CONFIG: configFile, VIDEO_KEY,
          }),
        );
      }
      const pids = workers.map((w) => w.pid!);
      const parkedPeak = pids.map(() => 0);
      workers.forEach((w, i) => w.on('message', (m: { type?: string; n?: number }) => {
        if (m?.type === 'parked') parkedPeak[i] = Math.max(parkedPeak[i], m.n ?? 0);
      }));
      connection = await Connection.connect({ address: temporal.address });
      const client = new Client({ connection, namespace: temporal.namespace });
      services = await createServices({ db, secret: SECRET, temporal: { client, taskQueue }, gatewayConfig: ConfigStore.fromFile(configFile, { VIDEO_KEY }), video: { outbox: { passive: true } } });
      // The api under load in a process of its own (as in production), not in the load generator's event loop.
      apiServer = await startBenchServer({
        databaseUrl,
        secret: SECRET,
        logFile: path.join(dir, 'api.log'),
        logLevel: 'warn',
        cpus: API_CPU,
        env: {
          TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace, TEMPORAL_TASK_QUEUE: taskQueue,
          GATEWAY_CONFIG: configFile, VIDEO_KEY,
        },
      });
      const api = apiServer.baseUrl;
      const { account } = await createAccount(createRepositories(db), { username: `bench_video_${process.pid}_${Date.now()}`, password: 'bench-password' });
      const record = await services.api.tokens.create(account.id, { name: 'bench-video', unlimited_quota: true });
      const key = `sk-${record.key}`;
      const body = JSON.stringify({ model: 'video-3.1-fast', prompt: 'a benchmark clip' });
      const headers = { authorization: key, 'content-type': 'application/json' };

      ctx.log(`video: ${TASKS} tasks in flight at once`);
      const cpu0 = pids.map(cpuSeconds);
      const ids: string[] = [];
      let next = 0;
      const t0 = Date.now();
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < TASKS) {
            next++;
            const res = await fetch(`${api}/v1/videos`, { method: 'POST', headers, body: JSON.stringify({ model: 'video-3.1', prompt: `in flight ${next}` }) });
            if (res.status !== 200) throw new Error(`submit answered ${res.status}`);
            ids.push(((await res.json()) as { id: string }).id);
          }
        }),
      );
      const submittedMs = Date.now() - t0;
      let done = 0;
      // Each worker's own peak: the target is per process.
      const peaks = pids.map(() => 0);
      for (let i = 0; i < 2400; i++) {
        done = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM video_tasks WHERE id = ANY($1) AND finished_at IS NOT NULL', [ids])).rows[0].n;
        pids.forEach((pid, w) => (peaks[w] = Math.max(peaks[w], rssMiB(pid)?.now ?? 0)));
        if (done === TASKS) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      const cpus = pids.map((pid, w) => cpuSeconds(pid) - cpu0[w]);
      const cpu = cpus.reduce((a, b) => a + b, 0);
      const rssNow = pids.map((pid) => rssMiB(pid)?.now ?? NaN);
      const peakRss = Math.max(...peaks);

      // Each task's lag: from its upstream's end (the simulator's own clock, same host) to its terminal row.
      const rows = await db.query<{ upstream_id: string | null; status: string; finished: number | null }>(
        'SELECT upstream_id, status, (extract(epoch FROM finished_at) * 1000)::float8 AS finished FROM video_tasks WHERE id = ANY($1)',
        [ids],
      );
      const lags: number[] = [];
      for (const r of rows.rows) {
        const timing = r.upstream_id ? sim.videoTiming(r.upstream_id) : undefined;
        if (timing && r.finished !== null) lags.push(r.finished - (timing.submittedAt + timing.generationMs));
      }
      lags.sort((a, b) => a - b);
      const pct = (p: number) => lags[Math.min(lags.length - 1, Math.floor(p * lags.length))] ?? NaN;
      const l = {
        p50: pct(0.5),
        p99: pct(0.99),
        max: lags.at(-1) ?? NaN,
        completed: rows.rows.filter((r) => r.status === 'completed').length,
        failed: rows.rows.filter((r) => r.status === 'failed').length,
      };
      const ledgerRows = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger WHERE task_id = ANY($1)', [ids])).rows[0].n;
      const sample = ids.slice(0, 10);
      const events = await Promise.all(sample.map(async (id) => (await client.workflow.getHandle(videoWorkflowId(id)).fetchHistory()).events?.length ?? 0));
      const perTask = events.reduce((a, b) => a + b, 0) / events.length;

      // Submit latency last, so its tasks need not finish (the worker is busy starting them throughout, as it would
      // be under such a stream of submits) and the measured phase can be long enough that one pause of the machine
      // does not decide the p99 on its own.
      // For the latency phase, as in the relay scenario (the in-flight phase ran on every core, as a worker host would): the api alone on core 0; the worker, the Temporal server and this process (load
      // generator and simulator) on the other core(s). PostgreSQL's server is not pinned: the backends of the api's
      // and the worker's connections run on either core (pinned to the worker's core, submit p99 was 540-820 ms).
      const others = otherCpus();
      for (const pid of [...pids, temporal.pid, process.pid]) if (pid) pin(pid, others);
      if (temporal.pid) lowerProcessPriority(WORKER_NICE, temporal.pid);
      const backends = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()');
      for (const b of backends.rows) pin(b.pid, others);
      ctx.log('video: submit latency, 50 connections');
      await runLoad({ url: `${api}/v1/videos`, connections: 50, durationSeconds: 60, amount: SUBMIT_WARMUP, method: 'POST', headers, body });
      const submit = await runLoad({ url: `${api}/v1/videos`, connections: 50, durationSeconds: 120, amount: SUBMITS, method: 'POST', headers, body });
      if (submit.non2xx || submit.errors) throw new Error(`submits failed: ${JSON.stringify(submit.statusCodes)} / ${submit.errors}`);

      const allDone = done === TASKS && l.completed === TASKS;
      const lagMet = allDone && l.p99 <= LAG_P99_TARGET_MS;
      const rssMet = peakRss > 0 && peakRss < RSS_TARGET_MIB;
      const eventsMet = perTask < EVENTS_BEFORE;
      const submitMet = submit.latencyMs.p99 < SUBMIT_P99_TARGET_MS;
      return {
        load: submit,
        figures: [
          ['Submit, 50 connections: req/s', submit.requestsPerSecond.toFixed(0)],
          ['Submit p50 / p99 / max', `${submit.latencyMs.p50} / ${submit.latencyMs.p99} / ${submit.latencyMs.max} ms`],
          ['Submits measured', String(submit.totalRequests)],
          [`${TASKS} tasks: submitted in`, `${(submittedMs / 1000).toFixed(1)} s (50 at a time)`],
          [`${TASKS} tasks: terminal`, `${done} of ${TASKS} (${l.completed} completed, ${l.failed} failed), ${ledgerRows} ledger rows`],
          ['Terminal after upstream completion: p50 / p99 / max', `${(l.p50 / 1000).toFixed(1)} s / ${(l.p99 / 1000).toFixed(1)} s / ${(l.max / 1000).toFixed(1)} s (upstream takes ${GENERATION_MS / 1000} s; polls every 5-10 s)`],
          ['History events per task (10 sampled)', `${perTask.toFixed(1)} (${EVENTS_BEFORE} before waiting moved into one activity)`],
          [`Worker CPU for the ${TASKS.toLocaleString('en')} tasks`, WORKERS === 1 ? `${cpu.toFixed(1)} s` : `${cpu.toFixed(1)} s (${cpus.map((c) => c.toFixed(1)).join(' + ')})`],
          [
            WORKERS === 1 ? 'Worker RSS peak while in flight (sampled every 0.5 s) / now' : 'Each worker: RSS peak while in flight (sampled every 0.5 s) / now',
            pids.map((_, w) => `${peaks[w].toFixed(0)} / ${rssNow[w].toFixed(0)} MiB`).join('; '),
          ],
          [WORKERS === 1 ? 'Tasks waited on at once (peak)' : 'Tasks each worker waited on at once (peak)', parkedPeak.join('; ')],
        ],
        notes: [
          `Submit phase: ${SUBMIT_WARMUP} unmeasured then ${SUBMITS} measured POST /v1/videos from autocannon, 50 connections, one key; the api process (bench/server.ts, compiled as \`npm start\` runs it) pinned to CPU ${API_CPU}; the worker, the Temporal dev server and this process (load generator, simulator) on the other core(s); PostgreSQL's backends on either (the server is not pinned, so the backends the api and the worker open run where the kernel puts them). It runs after the in-flight phase; the worker starts the submitted tasks throughout and is stopped before they finish.`,
          `The worker and the Temporal dev server run at nice ${WORKER_NICE} (WORKER_NICE), below the api, PostgreSQL and the load generator.`,
          'A submit answers once its hold and task row are durable (one group-commit operation, committed synchronously). The api runs as `gateway api` does, starting no workflow: the worker process starts each task after the answer (its outbox, 4 starts at a time, woken by NOTIFY at the commit), docs/decisions/0033-video-submit-answer-first.md.',
          `In-flight phase: ${TASKS} submits 50 at a time, then the time each task took to become terminal after its upstream job completed (${GENERATION_MS / 1000} s of simulated generation, measured from the simulator's own submit time): the wait for the next poll, the copy of the file into the object store (local files here) and the settle.`,
          'Each task runs its upstream part (submit, poll every 5-10 s, copy the file, settle and finish the task) in one heartbeating activity, and the workflow closes with a local activity (src/workflows/video-task.ts, src/domain/video/task-runner.ts); progress rows are written in batches once a second (progress-writer.ts). The activity parks its run in the worker process and completes asynchronously (src/temporal/parked-activities.ts: heartbeats, cancel and the result through the Temporal client), so the SDK holds nothing per waiting task. The worker runs with `gateway worker`\'s options (src/worker/worker.ts): 10,000 activities at once, 100 cached workflows, the workflow bundle built by `npm run build`.',
        ],
        target: {
          // Two issues' targets in one run: each part says whether it was met.
          description: [
            `submit p99 < ${SUBMIT_P99_TARGET_MS} ms at 50 connections (${submitMet ? 'met' : 'not met'})`,
            `${TASKS} tasks all completed, p99 <= ${LAG_P99_TARGET_MS / 1000} s after their upstream (${lagMet ? 'met' : 'not met'})`,
            `worker RSS < ${RSS_TARGET_MIB} MiB (${rssMet ? 'met' : 'not met'})`,
            `fewer than ${EVENTS_BEFORE} history events per task (${eventsMet ? 'met' : 'not met'})`,
          ].join('; '),
          met: submitMet && lagMet && rssMet && eventsMet,
        },
      };
    } finally {
      if (apiServer) await apiServer.stop();
      if (services) await services.close();
      await Promise.all(workers.map(stopChild));
      if (connection) await connection.close();
      await db.end();
      await sim.close();
      await temporal.shutdown();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

if (require.main === module && process.env[WORKER_ROLE] === '1') {
  workerMain().catch((err) => {
    process.stderr.write(`video bench worker: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
