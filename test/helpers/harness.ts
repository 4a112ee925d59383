import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Pool } from 'pg';
import { AppOptions, buildApp } from '../../src/api/app';
import type { GatewayDeps } from '../../src/api/deps';
import { createAccount } from '../../src/domain/accounts/accounts';
import { createRepositories } from '../../src/db/repositories';
import type { BatchWorkflowStarter } from '../../src/domain/keys/batches';
import type { KeyChangeBus } from '../../src/domain/keys/key-change-bus';
import { ConfigStore, GatewayConfig, GatewayConfigFileInput, validateGatewayConfig } from '../../src/gateway-config';
import { createServices, Services, ServicesOptions } from '../../src/runtime/services';
import type { Simulator, SimulatorOptions } from '../../src/simulator';
import { createGatewayWorker } from '../../src/worker/worker';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { Tracing } from '../../src/tracing';
import { openTestPool } from './test-database';

// Worker state changes at INFO drown the test output.
Runtime.install({ logger: new DefaultLogger('WARN') });

export const TEST_SECRET = 'test-secret-test-secret-test-secret-0123456789';

export function testEnv() {
  const get = (name: string) => {
    const v = process.env[name];
    if (!v) throw new Error(`${name} is unset: run the tests through jest (test/helpers/global-setup.ts)`);
    return v;
  };
  return {
    databaseUrl: get('GATEWAY_TEST_DATABASE_URL'),
    temporalAddress: get('GATEWAY_TEST_TEMPORAL_ADDRESS'),
    temporalNamespace: get('GATEWAY_TEST_TEMPORAL_NAMESPACE'),
    workflowBundle: get('GATEWAY_TEST_WORKFLOW_BUNDLE'),
  };
}

/** A validated gateway config from a config-file object (throws listing the problems of a bad one). */
export function testGatewayConfig(input: GatewayConfigFileInput, source = 'test'): GatewayConfig {
  const result = validateGatewayConfig(input, source);
  if (!result.ok) throw new Error(`invalid test gateway config:\n${result.problems.join('\n')}`);
  return result.config;
}

/**
 * A config store whose config the test replaces: `set(input)` validates the new config and reloads the
 * store, as a SIGHUP with a changed file would.
 */
export function mutableConfigStore(input: GatewayConfigFileInput): { store: ConfigStore; set(next: GatewayConfigFileInput): void } {
  let current = testGatewayConfig(input);
  const store = new ConfigStore(() => current);
  return {
    store,
    set(next) {
      current = testGatewayConfig(next);
      const r = store.reload();
      if (!r.ok) throw new Error(r.problems.join('\n'));
    },
  };
}

/** Collects every log line the app writes, so tests can assert what is (not) logged. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: string, done: () => void) {
    this.lines.push(chunk.toString());
    done();
  }
  text(): string {
    return this.lines.join('');
  }
}

export interface TestGateway {
  baseUrl: string;
  deps: GatewayDeps;
  /** Everything the composition root built (activity deps, config store, simulator). */
  services: Services;
  /** The in-process upstream simulator serving the built-in config; null when the test passed a config. */
  simulator: Simulator | null;
  db: Pool;
  /** The URL of the database this gateway runs on (embedded or the shared PostgreSQL one). */
  databaseUrl: string;
  temporal: Client;
  taskQueue: string;
  logs: LogCapture;
  close(): Promise<void>;
}

/**
 * A real gateway over loopback HTTP on the shared test database and Temporal server. `batchStarter` wraps
 * the Temporal batch starter (e.g. to make a start fail), for tests of how the batch service copes.
 */
export async function startGateway(
  opts: {
    taskQueue?: string;
    keyChangeBus?: ServicesOptions['keyChangeBus'];
    /** The gateway config; default: the built-in config with an upstream simulator of this gateway's own. */
    config?: GatewayConfig | ConfigStore;
    /** Options of that simulator (latency, faults need none here: use `simulator.addFault`). */
    simulator?: SimulatorOptions;
    bodyLimitBytes?: number;
    /** Other limits of the app (multipart size, request timeout, connection cap). */
    limits?: Pick<AppOptions, 'multipartLimitBytes' | 'requestTimeoutMs' | 'maxConnections' | 'responsesWebSocket'>;
    /** TRUST_PROXY of the app. */
    trustProxy?: string[];
    /** METRICS_TOKEN of the app. */
    metricsToken?: string;
    /** How long the pool keeps an idle connection (embedded default: forever); tests of reconnection shorten it. */
    poolIdleTimeoutMillis?: number;
    /** Embedded project: keep the database in this folder so a later startGateway with it is a restart. */
    embeddedDataDir?: string;
    /** PostgreSQL project: a fresh database of this gateway's own (dropped at close), for data at scale. */
    scratchDatabase?: boolean;
    batchStarter?: (real: BatchWorkflowStarter) => BatchWorkflowStarter;
    videoStarter?: ServicesOptions['videoStarter'];
    /** Relay tuning (adapters, cooldown, attempts). */
    relay?: ServicesOptions['relay'];
    /** Video workflow timing (tests poll fast and may shorten the deadline). */
    video?: ServicesOptions['video'];
    /** Started tracing: a server span per request and the Temporal client's OpenTelemetry interceptor. */
    tracing?: Tracing;
    /** Where webhooks may go; default: as the embedded default (public https, loopback over http). */
    outbound?: ServicesOptions['outbound'];
    /** Where finished videos are kept; default: a temporary directory of these services. */
    videoStore?: ServicesOptions['videoStore'];
    /** The clock of per-minute key limits. */
    clock?: () => number;
    /** Batch inference settings (lines in flight, expiry, input limits, webhook retries). */
    inferenceBatches?: ServicesOptions['inferenceBatches'];
  } = {},
): Promise<TestGateway> {
  const env = testEnv();
  const database = await openTestPool(5, { idleTimeoutMillis: opts.poolIdleTimeoutMillis, embeddedDataDir: opts.embeddedDataDir, scratch: opts.scratchDatabase });
  const db = database.pool;
  const connection = await Connection.connect({ address: env.temporalAddress });
  const interceptors = opts.tracing ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
  const temporal = new Client({ connection, namespace: env.temporalNamespace, interceptors });
  const taskQueue = opts.taskQueue ?? `test-${randomUUID()}`;
  // Request records stay on (tests assert what reached the upstream).
  const services = await createServices({
    db,
    secret: TEST_SECRET,
    temporal: { client: temporal, taskQueue },
    keyChangeBus: opts.keyChangeBus,
    batchStarter: opts.batchStarter,
    videoStarter: opts.videoStarter,
    gatewayConfig: opts.config,
    simulator: { maxRecords: 1000, ...opts.simulator },
    relay: opts.relay,
    video: opts.video,
    videoStore: opts.videoStore,
    outbound: opts.outbound ?? { allowLoopback: true, allow: [] },
    clock: opts.clock,
    inferenceBatches: opts.inferenceBatches,
  });
  const deps = services.api;
  const logs = new LogCapture();
  const app = await buildApp(deps, { logLevel: 'info', logStream: logs, bodyLimitBytes: opts.bodyLimitBytes, ...opts.limits, trustProxy: opts.trustProxy, metricsToken: opts.metricsToken, tracing: opts.tracing !== undefined });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    baseUrl: address,
    deps,
    services,
    simulator: services.simulator,
    db: readingAfterSettles(db, () => services.api.billing.barrier()),
    databaseUrl: database.url,
    temporal,
    taskQueue,
    logs,
    async close() {
      await app.close();
      await services.close();
      await connection.close();
      await database.close();
    },
  };
}

/**
 * The test's view of the database: each query first waits for this gateway's billing barrier (queued settles
 * committed, idle credit leases given back), as the gateway's own `/api/*` readers do.
 */
function readingAfterSettles(pool: Pool, barrier: () => Promise<void>): Pool {
  return new Proxy(pool, {
    get(target, prop) {
      if (prop === 'query') {
        return async (...args: unknown[]) => {
          await barrier();
          return (target.query as (...a: unknown[]) => unknown)(...args);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A real Temporal worker on the test server, using the bundle built once in global setup. */
export async function startWorker(
  gw: Pick<TestGateway, 'taskQueue' | 'services'>,
  opts: { keyChanges?: KeyChangeBus; tracing?: Tracing } = {},
): Promise<{ worker: Worker; stop(): Promise<void> }> {
  const env = testEnv();
  const { worker, connection } = await createGatewayWorker({
    address: env.temporalAddress,
    namespace: env.temporalNamespace,
    taskQueue: gw.taskQueue,
    // The gateway's own bus by default, so status changes made by workflows reach its key cache.
    deps: { ...gw.services.activities, keys: { ...gw.services.activities.keys, keyChanges: opts.keyChanges ?? gw.services.activities.keys.keyChanges } },
    // With tracing the workflows are bundled afresh, with Temporal's OpenTelemetry workflow interceptors.
    workflowBundle: opts.tracing ? undefined : { codePath: env.workflowBundle },
    metrics: gw.services.api.metrics,
    tracing: opts.tracing,
  });
  const running = worker.run();
  return {
    worker,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** A fresh account per test keeps tests independent on the shared database. */
export async function newAccount(db: Pool, opts: { admin?: boolean } = {}): Promise<{ id: number; username: string; password: string; systemToken: string; isAdmin: boolean }> {
  const username = `user_${randomUUID().slice(0, 12)}`;
  const password = 'correct horse battery';
  const { account, systemToken } = await createAccount(createRepositories(db), { username, password, admin: opts.admin });
  return { ...account, password, systemToken };
}

/** fetch with JSON in and out; returns status, headers and parsed body. */
export async function http(
  baseUrl: string,
  method: string,
  path: string,
  opts: { auth?: string; body?: unknown; headers?: Record<string, string>; rawBody?: string } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.auth !== undefined) headers.authorization = opts.auth;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  } else if (opts.rawBody !== undefined && !headers['content-type']) {
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // leave as text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}
