import { Client, Connection } from '@temporalio/client';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { startTracing, type Tracing } from '../tracing';
import { buildApp } from '../api/app';
import type { ProcessGroupView, TemporalDeps } from '../api/deps';
import type { Registry } from 'prom-client';
import { Config, ConfigError } from '../config';
import { createLocalKeyChangeBus } from '../domain/keys/key-change-bus';
import { createPgKeyChangeBus } from '../db/pg-key-change-bus';
import { startHoldSweeper } from '../domain/billing/sweeper';
import { settleJournalOf } from './settle-journal-files';
import { listenForVideoSubmits } from '../db/video-submit-listener';
import { openObjectStore } from '../stores';
import { ensureRetentionSchedule } from '../temporal/video-retention-schedule';
import { ensureBatchFileRetentionSchedule } from '../temporal/batch-file-retention-schedule';
import { BootstrapResult, ensureBootstrapAccount } from './bootstrap';
import { dataPaths, loadOrCreateSecret } from './data-dir';
import { Database, openDatabase } from './database';
import { lowerProcessPriority } from './priority';
import { createThreadedKeySealer } from './key-sealer';
import { createPool } from '../db/pool';
import type { Resources } from './resources';
import { createServices, openGatewayConfig } from './services';
import { openTemporal, TemporalTarget } from './temporal';

export interface GatewayRoles {
  /** Serve HTTP (and bootstrap the first account). */
  api: boolean;
  /** Run a Temporal worker on TEMPORAL_TASK_QUEUE. */
  worker: boolean;
}

/** This process's place in a process group (`--processes N`). */
export interface GroupRole {
  view: ProcessGroupView;
  /** The services' metrics registry, once they exist: the primary collects it for the group's /metrics. */
  setRegistry(registry: Registry): void;
}

export interface RunningGateway {
  baseUrl: string | null;
  database: Database;
  temporal: TemporalTarget;
  bootstrap: BootstrapResult | null;
  /** Where the embedded-mode GATEWAY_SECRET lives, when it came from DATA_DIR. */
  secretFile: string | null;
  /** Which gateway config serves: `GATEWAY_CONFIG <path>`, or `built-in upstream simulator at <url>`. */
  gatewayConfig: string;
  /** A worker-only process's /metrics (WORKER_METRICS_PORT), or null. */
  metricsUrl: string | null;
}

/**
 * GATEWAY_SECRET when set. Without it, and only while the database is embedded (its data lives in DATA_DIR
 * next to the secret), one is generated once into DATA_DIR; against a real DATABASE_URL it must be given.
 */
export function resolveSecret(config: Config, warn: (line: string) => void): { secret: string; file: string | null } {
  if (config.GATEWAY_SECRET) return { secret: config.GATEWAY_SECRET, file: null };
  if (config.DATABASE_URL) {
    throw new ConfigError([
      'GATEWAY_SECRET: required when DATABASE_URL is set (at least 32 characters; every api and worker ' +
        'process of one deployment needs the same value)',
    ]);
  }
  const hadData = existsSync(dataPaths(config.DATA_DIR).postgres);
  const { secret, created, file } = loadOrCreateSecret(config.DATA_DIR);
  if (created && hadData) {
    warn(`generated a new GATEWAY_SECRET in ${file} for existing data: keys stored before cannot be read back`);
  }
  return { secret, file };
}

/** LISTEN/NOTIFY does not cross the PGlite socket, and embedded mode is one process anyway. */
function keyChangeBusFor(database: Database, log: (line: string) => void) {
  if (database.embedded) return createLocalKeyChangeBus;
  return createPgKeyChangeBus(database.url, { log: (msg, err) => log(`${msg}${err ? `: ${(err as Error).message}` : ''}`) });
}

function baseUrlOf(address: AddressInfo): string {
  const wildcard = address.address === '0.0.0.0' || address.address === '::';
  const host = wildcard ? '127.0.0.1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

/**
 * Connections of a worker's bulk key work. One: on the 2-core bench machine, three let ten batches finish 3 s sooner
 * (47 s against 50 s for a million keys) but doubled the median of the chat calls made meanwhile (7.6 ms against 3.8).
 */
const BULK_KEY_CONNECTIONS = 1;

/**
 * Starts the parts `roles` asks for, registering each one's clean-up in `resources` as soon as it runs.
 * `onFatal` hears of a part that stops on its own (the worker), so the caller can shut the rest down.
 */
export async function startGateway(
  config: Config,
  roles: GatewayRoles,
  resources: Resources,
  io: { log: (line: string) => void; onFatal: (err: Error) => void },
  group: GroupRole | null = null,
): Promise<RunningGateway> {
  if (!roles.api && roles.worker && config.WORKER_NICE !== undefined) lowerProcessPriority(config.WORKER_NICE);
  const { secret, file: secretFile } = resolveSecret(config, io.log);
  // First, so a bad GATEWAY_CONFIG stops the start before anything heavy runs.
  const gatewayConfig = await openGatewayConfig(config.GATEWAY_CONFIG);
  resources.add('the upstream simulator', () => gatewayConfig.close());
  for (const w of gatewayConfig.store.current().warnings) io.log(`gateway config: ${w}`);
  // SIGHUP re-reads GATEWAY_CONFIG (with the built-in config it keeps it); never Node's default (exit).
  const unwatch = gatewayConfig.store.watchSighup({ info: io.log, warn: io.log, error: io.log });
  resources.add('the SIGHUP handler', unwatch);
  const database = await openDatabase(config, resources);
  const temporal = await openTemporal(config, resources, io.log);
  const taskQueue = config.TEMPORAL_TASK_QUEUE;

  // OpenTelemetry only when OTEL_EXPORTER_OTLP_ENDPOINT is set: otherwise nothing of it is even loaded.
  let tracing: Tracing | null = null;
  if (config.OTEL_EXPORTER_OTLP_ENDPOINT) {
    tracing = await startTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: config.OTEL_SERVICE_NAME });
    resources.add('the trace exporter', () => tracing!.shutdown());
  }

  // A client in every role: the api starts workflows; a worker-only process starts the video workflows of the
  // api-only processes' submits (their outboxes are passive, src/domain/video/workflow-outbox.ts).
  const connection = await Connection.connect({ address: temporal.address });
  resources.add('the Temporal client connection', () => connection.close());
  const interceptors = tracing
    ? { workflow: [new (await import('@temporalio/interceptors-opentelemetry')).OpenTelemetryWorkflowClientInterceptor()] }
    : undefined;
  const temporalDeps: TemporalDeps = { client: new Client({ connection, namespace: temporal.namespace, interceptors }), taskQueue };
  // One set of services for the api and the worker of this process. Bulk status changes made by the worker
  // must reach every api replica's key cache: in one process through the api's own bus, in a worker-only
  // process through a bus of its own on the same channel.
  const videoStore = openObjectStore(config.VIDEO_STORE_URL, config.DATA_DIR);
  if (!config.VIDEO_STORE_URL && config.DATABASE_URL) {
    io.log(`VIDEO_STORE_URL is unset: finished videos are kept in ${videoStore.description}, which every api and worker process must share`);
  }
  // Bulk key work, in a process that runs the worker: key material made on threads of their own, and the chunks'
  // transactions on a few connections of their own (on PostgreSQL; the embedded database is one session), so neither
  // holds up the requests the api answers. Added before the services: they close after the worker stopped.
  const keySealer = roles.worker ? createThreadedKeySealer(secret) : undefined;
  if (keySealer) resources.add('the key sealer threads', () => keySealer.close());
  const bulkDb = roles.worker && !database.embedded ? createPool(database.url, BULK_KEY_CONNECTIONS) : undefined;
  if (bulkDb) resources.add('the bulk key work pool', () => bulkDb.end());
  const services = await createServices({
    db: database.pool,
    bulkDb,
    keySealer,
    videoStore,
    videoMaxResultBytes: config.VIDEO_MAX_RESULT_BYTES,
    inferenceBatches: {
      concurrency: config.BATCH_CONCURRENCY,
      retentionSeconds: config.BATCH_FILE_RETENTION_DAYS * 86_400,
      jsonLimits: { maxDepth: config.GATEWAY_JSON_MAX_DEPTH, maxArrayLength: config.GATEWAY_JSON_MAX_ARRAY_LENGTH },
    },
    secret,
    settleJournal: settleJournalOf(config.BILLING_JOURNAL_DIR, config.DATA_DIR, database),
    temporal: temporalDeps,
    keyChangeBus: keyChangeBusFor(database, io.log),
    log: io.log,
    processGroup: group?.view ?? null,
    gatewayConfig,
    // Loopback and http only where everything runs on one developer's machine (the embedded database).
    outbound: { allowLoopback: database.embedded, allow: config.OUTBOUND_ALLOWLIST },
    video: {
      deadlineSeconds: config.GATEWAY_VIDEO_DEADLINE_SECONDS,
      retentionSeconds: config.VIDEO_RETENTION_DAYS * 86_400,
      // api only: answer submits, start nothing (the workers do, on NOTIFY); worker only: start every task at once.
      outbox: roles.api && !roles.worker ? { passive: true } : !roles.api ? { graceMs: 0 } : undefined,
    },
  });
  resources.add('the key change bus', () => services.close());
  group?.setRegistry(services.metrics.registry);
  // A worker beside api-only processes (a worker-only process, or the one worker of a group) hears their submits.
  if (roles.worker && (!roles.api || group) && config.DATABASE_URL) {
    const outbox = services.videoOutbox;
    if (outbox) {
      const listener = await listenForVideoSubmits(config.DATABASE_URL, taskQueue, () => outbox.reconcileSoon(), io.log);
      resources.add('the video submit listener', () => listener.close());
    }
  }
  const deps = roles.api ? services.api : null;

  if (roles.worker) {
    const sweeper = startHoldSweeper(services.repos.holds, {
      onError: (err) => io.log(`hold sweeper: ${(err as Error).message}`),
    });
    resources.add('the quota hold sweeper', () => sweeper.stop());
    // Every worker brings the schedule to its retention; the passes run on whichever worker takes them.
    await ensureRetentionSchedule(temporalDeps.client, taskQueue, config.VIDEO_RETENTION_DAYS * 86_400).catch((err: Error) =>
      io.log(`video retention schedule: ${err.message}`),
    );
    await ensureBatchFileRetentionSchedule(temporalDeps.client, taskQueue).catch((err: Error) => io.log(`batch file retention schedule: ${err.message}`));
    // Loaded only where a worker runs: `gateway api` then carries neither the worker SDK nor the activities.
    const { createGatewayWorker } = await import('../worker/worker');
    const { worker, connection } = await createGatewayWorker({
      address: temporal.address,
      namespace: temporal.namespace,
      taskQueue,
      deps: services.activities,
      metrics: services.metrics,
      tracing,
    });
    let stopping = false;
    const running = worker.run().then(
      () => {
        if (!stopping) io.onFatal(new Error('the Temporal worker stopped unexpectedly'));
      },
      (err: Error) => io.onFatal(new Error(`the Temporal worker failed: ${err.message}`)),
    );
    resources.add('the Temporal worker', async () => {
      stopping = true;
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
    });
  }

  let baseUrl: string | null = null;
  let bootstrap: BootstrapResult | null = null;
  if (deps) {
    bootstrap = await ensureBootstrapAccount(deps, { systemToken: config.GATEWAY_BOOTSTRAP_TOKEN });
    const app = await buildApp(deps, {
      logLevel: config.LOG_LEVEL,
      bodyLimitBytes: config.GATEWAY_BODY_LIMIT_BYTES,
      multipartLimitBytes: config.GATEWAY_MULTIPART_LIMIT_BYTES,
      responsesWebSocket: config.RESPONSES_WEBSOCKET === 'on',
      requestTimeoutMs: config.GATEWAY_REQUEST_TIMEOUT_SECONDS * 1000,
      maxConnections: config.GATEWAY_MAX_CONNECTIONS,
      trustProxy: config.TRUST_PROXY,
      jsonLimits: { maxDepth: config.GATEWAY_JSON_MAX_DEPTH, maxArrayLength: config.GATEWAY_JSON_MAX_ARRAY_LENGTH },
      metricsToken: config.METRICS_TOKEN,
      metricsOpen: database.embedded,
      tracing: tracing !== null,
    });
    resources.add('the HTTP server', () => app.close());
    await app.listen({ port: config.PORT, host: config.HOST });
    baseUrl = baseUrlOf(app.server.address() as AddressInfo);
  }
  let metricsUrl: string | null = null;
  if (!roles.api && roles.worker && config.WORKER_METRICS_PORT !== undefined) {
    const { startMetricsServer } = await import('../observability/metrics-server');
    const server = await startMetricsServer(services.metrics.registry, { port: config.WORKER_METRICS_PORT, host: config.HOST, token: config.METRICS_TOKEN });
    resources.add('the metrics server', () => server.close());
    metricsUrl = server.url;
  }
  return { baseUrl, database, temporal, bootstrap, secretFile, gatewayConfig: gatewayConfig.description, metricsUrl };
}
