import { OutboundPolicy, STRICT_OUTBOUND } from '../domain/outbound/address-policy';
import type { JsonShapeLimits } from '../domain/json-shape';
import { KeyRateLimiter } from '../db/key-rate-limiter';
import { GatewayMetrics } from '../observability/metrics';
import { BillingService } from '../domain/billing/billing-service';
import { FileSettleJournal, startSettleJournalRecovery } from './settle-journal-files';
import { createUpstreamAdapters } from '../upstream/registry';
import type { Pool } from 'pg';
import { createRepositories } from '../db/repositories';
import type { Repositories } from '../domain/ports/repositories';
import { postOutbound } from '../upstream/public-request';
import type { ActivityDeps } from '../activities';
import type { GatewayDeps, ProcessGroupView, TemporalDeps } from '../api/deps';
import { createCatalog } from '../domain/catalog';
import { createRelayEngine, type RelayEngineOptions } from '../domain/relay/engine';
import type { LeaseOptions } from '../domain/billing/credit-leases';
import { ResponseIds } from '../domain/relay/response-ids';
import { BatchSettings, BatchWorkflowStarter, createBatchService } from '../domain/keys/batches';
import { createKeyAuthenticator, KeyAuthenticator } from '../domain/keys/key-auth';
import { createLocalKeyChangeBus, KeyChangeBus } from '../domain/keys/key-change-bus';
import { KeyCipher } from '../domain/keys/key-material';
import { inlineKeySealer, type KeySealer } from '../domain/keys/key-sealer';
import { createTokenService } from '../domain/keys/tokens';
import { builtInGatewayConfig } from '../gateway-config/builtin';
import type { GatewayConfig } from '../gateway-config/schema';
import { ConfigStore } from '../gateway-config/store';
import { createTemporalBatchStarter } from '../temporal/batch-starter';
import { createParkedActivities } from '../temporal/parked-activities';
import { createTemporalVideoStarter } from '../temporal/video-starter';
import { createVideoService, type VideoWorkflowStarter, type VideoSettings } from '../domain/video/video-service';
import { VideoLinkSigner } from '../domain/video/signed-links';
import { createProgressWriter } from '../domain/video/progress-writer';
import { createVideoTaskRunner, DEFAULT_MAX_RESULT_BYTES } from '../domain/video/task-runner';
import { createLocalObjectStore } from '../stores/local-store';
import type { ObjectStore } from '../domain/ports/object-store';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { VideoWorkflowOutbox } from '../domain/video/workflow-outbox';
import type { Simulator, SimulatorOptions } from '../simulator';
import { batchLineCall, batchLineEstimate } from '../domain/batches/line-endpoints';
import { PROVIDER_BATCHES } from '../upstream/provider-batches';
import { createBatchFiles } from '../domain/batches/files';
import { createInferenceBatches, type InferenceBatchSettings } from '../domain/batches/batch-service';
import { LineSlots } from '../domain/batches/slots';
import { keyPrincipalById } from '../domain/keys/key-auth';
import { admitKey, concurrencyOf } from '../domain/limits/key-admission';
import { createTemporalInferenceBatchStarter } from '../temporal/inference-batch-starter';
import type { InferenceBatchInput } from '../workflows/inference-batch';

/**
 * The composition root: every service of a process is built here, once, and handed out as the api's deps
 * (`services.api`) and the worker's activity deps (`services.activities`). `runtime/gateway.ts`, the test
 * harness and the benchmarks all build their services through this file, so a new service is wired in one
 * place.
 */

/** Where the gateway config comes from, and what serves when none is given. */
export interface GatewayConfigSource {
  store: ConfigStore;
  /** The in-process upstream simulator, when the built-in config serves. */
  simulator: Simulator | null;
  /** For the start banner and logs: the file path, or "built-in upstream simulator at <url>". Never a secret. */
  description: string;
  /** Stops the simulator (if one was started). */
  close(): Promise<void>;
}

/**
 * The config store of a process. With a path (GATEWAY_CONFIG), the file's channels serve and a bad file
 * throws GatewayConfigError listing every problem. Without one, the upstream simulator is started in this
 * process on a free loopback port and the built-in config (its channels, list prices) serves.
 */
export async function openGatewayConfig(
  path: string | undefined,
  opts: { env?: NodeJS.ProcessEnv; simulator?: SimulatorOptions } = {},
): Promise<GatewayConfigSource> {
  if (path) {
    const store = ConfigStore.fromFile(path, opts.env ?? process.env);
    return { store, simulator: null, description: `GATEWAY_CONFIG ${path}`, close: async () => {} };
  }
  // Loaded only here: a gateway with its own config never loads the simulator's code. (The file itself, not its
  // folder: the compiled build resolves a dynamic import as ES modules do.)
  const { startSimulator, SIMULATOR_MODELS } = await import('../simulator/index');
  // Request records keep headers (credentials included): a long-running process keeps none.
  const simulator = await startSimulator({ maxRecords: 0, ...opts.simulator, port: 0 });
  try {
    const store = ConfigStore.fixed(builtInGatewayConfig(simulator.url, SIMULATOR_MODELS));
    return {
      store,
      simulator,
      description: `built-in upstream simulator at ${simulator.url}`,
      close: () => simulator.close(),
    };
  } catch (err) {
    await simulator.close();
    throw err;
  }
}

export interface ServicesOptions {
  db: Pool;
  secret: string;
  /** The Temporal client the api starts workflows with; null in a worker-only process and the benchmarks. */
  temporal?: TemporalDeps | null;
  /** Builds the cross-replica key change bus; defaults to in-process invalidation only. */
  keyChangeBus?: (keyAuth: KeyAuthenticator) => KeyChangeBus | Promise<KeyChangeBus>;
  /** Chunking of bulk key workflows; the defaults suit production. */
  batches?: Partial<BatchSettings>;
  /** Wraps the Temporal batch starter (tests make starts fail with it). */
  batchStarter?: (real: BatchWorkflowStarter) => BatchWorkflowStarter;
  /** Wraps the Temporal video starter (tests of the outbox: a start that fails). */
  videoStarter?: (real: VideoWorkflowStarter) => VideoWorkflowStarter;
  /**
   * The gateway config: an opened source (its close() is then the caller's), a store, or a fixed config.
   * Omitted: the built-in config with an upstream simulator started for these services (closed with them).
   */
  gatewayConfig?: GatewayConfigSource | ConfigStore | GatewayConfig;
  /** Options of the in-process simulator, when one is started here. */
  simulator?: SimulatorOptions;
  /** Relay tuning (adapters, cooldown, attempts); the engine's defaults suit production. */
  relay?: Partial<Omit<RelayEngineOptions, 'config' | 'responseIds'>> & {
    /** Credit leases of the process's billing (ignored with `billing`); false: every call takes its own hold. */
    leases?: LeaseOptions | false;
  };
  /** Video workflow timing (deadline, poll intervals); the defaults follow the spec. */
  video?: Partial<VideoSettings>;
  /** Where finished videos are kept; default: a fresh directory under the system's temporary directory. */
  videoStore?: ObjectStore;
  /** Largest finished video copied into the store (default 2 GiB). */
  videoMaxResultBytes?: number;
  /** Where calls made for users may go; default: public https addresses only. */
  outbound?: OutboundPolicy;
  /** The clock of per-minute key limits (ms since the epoch); tests move it to the next minute. */
  clock?: () => number;
  /** The pool of bulk key work (batch chunks); default: `db`. */
  bulkDb?: Pool;
  /** Makes new keys' material for batches; default: in this thread (tests, tools). The worker's runs on threads. */
  keySealer?: KeySealer;
  /** Batch inference: lines in flight per worker process, file retention, expiry and limits (tests shorten them). */
  inferenceBatches?: InferenceBatchOptions;
  /**
   * Where lease settles are journaled before their answers leave (BILLING_JOURNAL_DIR, docs/decisions/0062), and
   * which database they are for (no credentials); unset: no journal, an answer waits for its settle's commit.
   */
  settleJournal?: { dir: string; database: string };
  /** Where background work reports its errors (the gateway process's log); default: standard error. */
  log?: (line: string) => void;
  /** The process group the api serves in (`--processes N`), whose metrics and readiness it answers; default none. */
  processGroup?: ProcessGroupView | null;
}

export interface InferenceBatchOptions extends Partial<InferenceBatchSettings> {
  /** BATCH_CONCURRENCY (default 64). */
  concurrency?: number;
  /** BATCH_FILE_RETENTION_DAYS in seconds (default 30 days). */
  retentionSeconds?: number;
  /** How long one run of lines goes on before the workflow starts the next (default 5 minutes). */
  runMs?: number;
  maxInputBytes?: number;
  maxInputLines?: number;
  /** A line's nesting depth and array lengths: the bounds of a request body (GATEWAY_JSON_MAX_DEPTH, ..._ARRAY_LENGTH). */
  jsonLimits?: JsonShapeLimits;
  webhookRetry?: InferenceBatchInput['webhookRetry'];
  /** How long a run of lines may go without a heartbeat before another worker takes it (default 30 s). */
  heartbeatTimeoutMs?: number;
  /** How often a provider batch is polled: from `min`, doubling to `max` (default 5 s to 60 s). */
  providerPollMs?: { min: number; max: number };
}

export interface Services {
  /** The repositories over the process's pool. */
  repos: Repositories;
  /** Everything routes need (buildApp). */
  api: GatewayDeps;
  /** Everything activities need (createGatewayWorker). */
  activities: ActivityDeps;
  /** Where finished videos are kept. */
  videoStore: ObjectStore;
  /** Starts the workflows of submitted video tasks (null without a Temporal client). */
  videoOutbox: VideoWorkflowOutbox | null;
  metrics: GatewayMetrics;
  config: ConfigStore;
  /** The in-process upstream simulator when the built-in config serves, else null. */
  simulator: Simulator | null;
  /** Which config serves, for banners and logs. */
  configDescription: string;
  /** Closes what createServices started, last first: the key change bus, then the simulator it started. */
  close(): Promise<void>;
}

function isSource(v: ServicesOptions['gatewayConfig']): v is GatewayConfigSource {
  return typeof v === 'object' && v !== null && 'store' in v && 'description' in v;
}

export async function createServices(opts: ServicesOptions): Promise<Services> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const closers: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    for (let c = closers.pop(); c; c = closers.pop()) await c();
  };

  let source: Omit<GatewayConfigSource, 'close'>;
  const given = opts.gatewayConfig;
  if (given === undefined) {
    const opened = await openGatewayConfig(undefined, { simulator: opts.simulator });
    closers.push(() => opened.close());
    source = opened;
  } else if (isSource(given)) {
    source = given;
  } else if (given instanceof ConfigStore) {
    source = { store: given, simulator: null, description: `config ${given.current().source}` };
  } else {
    source = { store: ConfigStore.fixed(given), simulator: null, description: `config ${given.source}` };
  }

  try {
    const { db } = opts;
    const repos = createRepositories(db);
    const config = source.store;
    const cipher = new KeyCipher(opts.secret);
    const keyAuth = createKeyAuthenticator(repos.keys);
    const keyChanges = await (opts.keyChangeBus ?? createLocalKeyChangeBus)(keyAuth);
    closers.push(() => keyChanges.close());
    const tokens = createTokenService({
      repos,
      cipher,
      publishKeyChange: (tx, id) => keyChanges.publish(tx, id),
      afterKeyChange: (change) => keyChanges.afterCommit(change),
    });
    const temporal = opts.temporal ?? null;
    let starter: BatchWorkflowStarter | null = temporal ? createTemporalBatchStarter(temporal) : null;
    if (starter && opts.batchStarter) starter = opts.batchStarter(starter);
    const batches = createBatchService({ repos, tokens, cipher, starter, settings: opts.batches });
    const videoLinks = new VideoLinkSigner(opts.secret);
    const outbound = opts.outbound ?? STRICT_OUTBOUND;
    const metrics = new GatewayMetrics(db);
    const limits = new KeyRateLimiter(db, { now: opts.clock, onLimited: (tokenId, kind) => metrics.rateLimited.inc({ key_id: String(tokenId), kind }) });
    // After the last request: the in-flight slots this process still holds are given back.
    closers.push(() => limits.close());
    const catalog = createCatalog(config);
    // One billing per process: every relay endpoint and video submit share its group commit and credit leases.
    const journal =
      opts.settleJournal && !opts.relay?.billing
        ? new FileSettleJournal(opts.settleJournal.dir, { database: opts.settleJournal.database, onError: (err, what) => log(`${what}: ${(err as Error).message}`) })
        : undefined;
    if (journal) closers.push(async () => journal.close());
    const billing = opts.relay?.billing ?? new BillingService(repos.holds, { leases: opts.relay?.leases, journal });
    // Before the pool closes: the settles still queued run, the credit leases are given back.
    closers.push(() => billing.close());
    if (journal) {
      // The settles of processes that died before committing them are billed before this one serves.
      const recovery = startSettleJournalRecovery(journal, (op) => billing.batcher.submitEncoded(op, { linger: true }), {
        onError: (err) => log(`settle journal recovery: ${(err as Error).message}`),
        onReplayed: (n) => log(`settle journal: replayed ${n} settle(s) of a process that stopped before committing them`),
      });
      closers.push(() => recovery.stop());
      await recovery.first;
    }
    const upstream = opts.relay?.adapters ?? createUpstreamAdapters();
    const engine = createRelayEngine({ ...opts.relay, adapters: upstream, config, metrics, billing, responseIds: new ResponseIds(opts.secret) });
    let videoStore = opts.videoStore;
    if (!videoStore) {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-videos-'));
      closers.push(async () => rmSync(dir, { recursive: true, force: true }));
      videoStore = createLocalObjectStore(dir);
    }
    let videoStarter: VideoWorkflowStarter | null = temporal ? createTemporalVideoStarter(temporal) : null;
    if (videoStarter && opts.videoStarter) videoStarter = opts.videoStarter(videoStarter);
    const videos = createVideoService({ tasks: repos.videoTasks, billing, config, starter: videoStarter, store: videoStore, settings: opts.video });
    // Before the pool closes: the workflow starts still queued by submits are made.
    closers.push(() => videos.close());
    const videoProgress = createProgressWriter(repos.videoTasks);
    // Before the pool closes: the progress still pending is written.
    closers.push(() => videoProgress.close());
    const videoRunner = createVideoTaskRunner({
      repos,
      billing,
      config,
      progress: videoProgress,
      store: videoStore,
      maxResultBytes: opts.videoMaxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
      adapters: upstream.video,
    });
    // A worker of this process parks its video tasks' waits here (completed through the client): null without one.
    const parkedActivities = temporal
      ? createParkedActivities(temporal.client.activity, { onError: (err, what) => log(`parked activity ${what}: ${(err as Error).message}`) })
      : null;
    // Before the pool closes: what still runs is stopped and handed back to Temporal.
    if (parkedActivities) closers.push(() => parkedActivities.close());
    const batchOpts = opts.inferenceBatches ?? {};
    const batchFiles = createBatchFiles({ files: repos.batchFiles, store: videoStore, limits: { maxBytes: batchOpts.maxInputBytes, maxLines: batchOpts.maxInputLines } });
    const inferenceBatches = createInferenceBatches({
      repos,
      files: batchFiles,
      starter: temporal ? createTemporalInferenceBatchStarter(temporal, { webhookRetry: batchOpts.webhookRetry, heartbeatTimeoutMs: batchOpts.heartbeatTimeoutMs }) : null,
      settings: batchOpts,
    });
    const loadKey = (tokenId: number) => keyPrincipalById(repos.keys, tokenId);
    const batchActivities = {
      repos,
      files: batchFiles,
      provider: {
        batches: repos.batches,
        config,
        billing,
        adapters: PROVIDER_BATCHES,
        estimate: batchLineEstimate(engine),
        loadKey,
        onLine: (outcome: 'succeeded' | 'failed') => metrics.batchLines.inc({ mode: 'provider', outcome }),
      },
      providerPollMs: batchOpts.providerPollMs,
      store: videoStore,
      maxLines: batchFiles.maxLines,
      jsonLimits: batchOpts.jsonLimits,
      retentionSeconds: batchOpts.retentionSeconds ?? 30 * 86_400,
      runMs: batchOpts.runMs,
      runner: {
        batches: repos.batches,
        callLine: batchLineCall(engine),
        slots: new LineSlots(batchOpts.concurrency ?? 64),
        loadKey,
        admit: (key: Parameters<typeof admitKey>[1]) => admitKey({ limits, config }, key),
        concurrencyOf: (key: Parameters<typeof admitKey>[1]) => concurrencyOf(config, key),
        onLine: (outcome: 'succeeded' | 'failed') => metrics.batchLines.inc({ mode: 'gateway', outcome }),
        log,
      },
    };
    return {
      api: { probeDatabase: () => db.query('SELECT 1'), repos, cipher, keyAuth, keyChanges, tokens, batches, temporal, catalog, config, billing, engine, upstream, videos, videoLinks, videoStore, metrics, processGroup: opts.processGroup ?? null, outbound, limits, batchFiles, inferenceBatches },
      activities: {
        databaseNow: async () => (await db.query<{ now: Date }>('SELECT now() AS now')).rows[0].now,
        keys: {
          repos,
          bulkRepos: opts.bulkDb ? createRepositories(opts.bulkDb) : repos,
          cipher,
          keySealer: opts.keySealer ?? inlineKeySealer(cipher),
          keyChanges,
        },
        video: { videoRunner, parkedActivities },
        webhooks: { repos, postOutbound, outbound, cipher, videoLinks },
        inferenceBatches: batchActivities,
      },
      repos,
      videoStore,
      videoOutbox: videos.outbox,
      metrics,
      config,
      simulator: source.simulator,
      configDescription: source.description,
      close: closeAll,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
