import type { Pool } from 'pg';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { createVideoTaskRepository } from '../db/repositories/video-tasks';
import { sameSecret } from '../domain/keys/key-material';
import { billableShares, DIMENSIONS, type Dimension, type TokenUsage } from '../domain/pricing/usage';

/** METRICS_TOKEN: with one set, only `Authorization: Bearer <token>` may read the metrics. */
export function metricsAuthorized(authorization: string | undefined, token: string | null | undefined): boolean {
  if (!token) return true;
  const header = authorization ?? '';
  return sameSecret(header.startsWith('Bearer ') ? header.slice(7) : '', token);
}

/**
 * A histogram observed through children kept per label set: no child is made per observation on the hot path
 * (prom-client still checks and hashes the labels inside each child's observe).
 */
export interface CachedHistogram<L extends string> {
  readonly histogram: Histogram<L>;
  observe(labels: Record<L, string>, value: number): void;
}

function cached<L extends string>(histogram: Histogram<L>, names: L[]): CachedHistogram<L> {
  const children = new Map<string, { observe(v: number): void }>();
  return {
    histogram,
    observe(labels, value) {
      let key = labels[names[0]];
      for (let i = 1; i < names.length; i++) key += `\u0001${labels[names[i]]}`;
      let child = children.get(key);
      if (!child) {
        child = histogram.labels(labels);
        children.set(key, child);
      }
      child.observe(value);
    },
  };
}

/**
 * The gateway's Prometheus metrics (`GET /metrics`), one registry per set of services. Labels are bounded: route
 * family, status code, model only when the gateway config prices it (else `other`), channel names from the config;
 * never a key, a key id or an account. Balances and task counts are read from PostgreSQL when scraped, so they
 * are the same whichever replica answers.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests: CachedHistogram<'family' | 'status' | 'model'>;
  readonly upstream: CachedHistogram<'channel' | 'outcome'>;
  readonly upstreamErrors: Counter<'channel' | 'kind'>;
  readonly creditsBilled: Counter<'source'>;
  readonly tokens: Counter<'dimension'>;
  readonly activityFailures: Counter<'activity' | 'kind'>;
  readonly workflowFailures: Counter<'workflow' | 'kind'>;
  readonly unexpectedErrors: Counter<'route'>;
  readonly rateLimited: Counter<'key_id' | 'kind'>;
  readonly batchLines: Counter<'mode' | 'outcome'>;

  constructor(db: Pool) {
    const registers = [this.registry];
    const videoTasks = createVideoTaskRepository(db);
    // Gauges read from PostgreSQL: every process of a group reads the same value, which its aggregate must not add up.
    const fromDatabase = { registers, aggregator: 'first' } as const;
    this.requests = cached(new Histogram({
      name: 'gateway_http_request_duration_seconds',
      help: 'HTTP requests answered, by route family, status code and model, with their duration',
      labelNames: ['family', 'status', 'model'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }), ['family', 'status', 'model']);
    this.upstream = cached(new Histogram({
      name: 'gateway_upstream_request_duration_seconds',
      help: 'Upstream attempts by channel and outcome (ok or error), with their duration',
      labelNames: ['channel', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }), ['channel', 'outcome']);
    this.upstreamErrors = new Counter({
      name: 'gateway_upstream_errors_total',
      help: 'Failed upstream attempts by channel and kind (status, timeout, network, protocol, aborted)',
      labelNames: ['channel', 'kind'],
      registers,
    });
    this.creditsBilled = new Counter({
      name: 'gateway_credits_billed_total',
      help: 'Credits written to the ledger by this process (500,000 credits = 1 USD), by source',
      labelNames: ['source'],
      registers,
    });
    this.tokens = new Counter({
      name: 'gateway_tokens_billed_total',
      help: 'Tokens of billed relay calls by the dimension they are priced in, as disjoint shares that add up to prompt + completion: input (uncached, other than image and audio), cache_read, cache_write_5m, cache_write_1h, output (other than reasoning and audio), reasoning, image_input, audio_input, audio_output',
      labelNames: ['dimension'],
      registers,
    });
    this.activityFailures = new Counter({
      name: 'gateway_activity_failures_total',
      help: 'Activity attempts of this worker that failed, by activity type and kind (retryable, non_retryable, cancelled, timeout)',
      labelNames: ['activity', 'kind'],
      registers,
    });
    this.rateLimited = new Counter({
      name: 'gateway_rate_limited_total',
      help: 'Requests refused with 429 by a key\'s rate limit (never billed, never sent upstream), by key id and limit kind (requests, tokens, concurrency)',
      labelNames: ['key_id', 'kind'],
      registers,
    });
    this.batchLines = new Counter({
      name: 'gateway_batch_lines_total',
      help: 'Batch lines this process ran to an outcome, by mode (gateway: run through the relay; provider: the provider\'s batch API) and outcome (succeeded, failed)',
      labelNames: ['mode', 'outcome'],
      registers,
    });
    new Gauge({
      name: 'gateway_batches',
      help: 'Inference batches by API and status, all replicas',
      labelNames: ['api', 'status'],
      ...fromDatabase,
      async collect() {
        const r = await db.query<{ api: string; status: string; n: number }>('SELECT api, status, count(*)::int AS n FROM inference_batches WHERE deleted_at IS NULL GROUP BY api, status');
        this.reset();
        for (const row of r.rows) this.set({ api: row.api, status: row.status }, row.n);
      },
    });
    this.workflowFailures = new Counter({
      name: 'gateway_workflow_failures_total',
      help: 'Workflow executions of this worker that failed, by workflow type and kind (failed, cancelled, task_failed)',
      labelNames: ['workflow', 'kind'],
      registers,
    });
    this.unexpectedErrors = new Counter({
      name: 'gateway_unexpected_errors_total',
      help: 'Requests ended by an error the gateway did not foresee (answered 500 in the family format), by route',
      labelNames: ['route'],
      registers,
    });
    new Gauge({
      name: 'gateway_quota_holds_outstanding',
      help: 'Quota holds not yet settled or released (credit leases included), all replicas',
      ...fromDatabase,
      async collect() {
        const r = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM quota_holds');
        this.set(r.rows[0].n);
      },
    });
    new Gauge({
      name: 'gateway_quota_held_credits',
      help: 'Credits reserved by outstanding holds, all replicas',
      ...fromDatabase,
      async collect() {
        const r = await db.query<{ s: string }>('SELECT COALESCE(sum(amount), 0)::bigint AS s FROM quota_holds');
        this.set(Number(r.rows[0].s));
      },
    });
    new Gauge({
      name: 'gateway_video_tasks',
      help: 'Video tasks by family and status, all replicas',
      labelNames: ['family', 'status'],
      ...fromDatabase,
      async collect() {
        const r = await db.query<{ family: string; status: string; n: number }>(
          'SELECT family, status, count(*)::int AS n FROM video_tasks GROUP BY family, status',
        );
        this.reset();
        for (const row of r.rows) this.set({ family: row.family, status: row.status }, row.n);
      },
    });
    new Gauge({
      name: 'gateway_video_results',
      help: "Completed video tasks by where their file is: stored (a copy in the gateway's object store), fallback (the copy gave up; the link serves the upstream's file), deleted (retention removed the copy); all replicas",
      labelNames: ['state'],
      ...fromDatabase,
      async collect() {
        const c = await videoTasks.resultCounts();
        this.set({ state: 'stored' }, c.stored);
        this.set({ state: 'fallback' }, c.fallback);
        this.set({ state: 'deleted' }, c.deleted);
      },
    });
  }

  /** Counts a billed call's tokens by dimension (its disjoint shares, so they add up to its prompt + completion). */
  tokensBilled(usage: TokenUsage | undefined): void {
    if (!usage) return;
    const shares = billableShares(usage);
    for (const d of DIMENSIONS) if (shares[d] > 0) this.tokens.inc({ dimension: DIMENSION_LABELS[d] }, shares[d]);
  }
}

const DIMENSION_LABELS: Record<Dimension, string> = {
  input: 'input',
  cacheRead: 'cache_read',
  cacheWrite5m: 'cache_write_5m',
  cacheWrite1h: 'cache_write_1h',
  output: 'output',
  reasoning: 'reasoning',
  imageInput: 'image_input',
  audioInput: 'audio_input',
  audioOutput: 'audio_output',
};
