import { Context } from '@temporalio/activity';
import type { Repositories } from '../domain/ports/repositories';
import { failBatch } from '../domain/batches/fail';
import { finalizeBatch } from '../domain/batches/finalize';
import { collectProviderBatch, planProviderLines, type ProviderDeps, submitProviderBatch } from '../domain/batches/provider';
import { prepareBatch } from '../domain/batches/prepare';
import { type RunEnd, runBatchLines, type RunnerDeps } from '../domain/batches/runner';
import type { BatchFiles } from '../domain/batches/files';
import type { ObjectStore } from '../domain/ports/object-store';
import type { JsonShapeLimits } from '../domain/json-shape';

/** What batch inference's activities need (the composition root builds it; the runner's relay engine is the process's). */
export interface BatchActivityDeps {
  repos: Pick<Repositories, 'batches' | 'batchFiles' | 'transactions'>;
  store: ObjectStore;
  runner: RunnerDeps;
  files: BatchFiles;
  /** Lines sent to the providers' own batch APIs (channels with `batch_api: true`). */
  provider: ProviderDeps;
  /** How often a provider batch is polled: from `min`, doubling to `max` (default 5 s to 60 s). */
  providerPollMs?: { min: number; max: number };
  maxLines: number;
  /** A line's bounds: those of a request body. */
  jsonLimits?: JsonShapeLimits;
  retentionSeconds: number;
  /** How long one run of lines goes on before the workflow starts the next (default 5 minutes). */
  runMs?: number;
}

/** Batch inference: thin wrappers over src/domain/batches; each honours the activity's cancellation. */
export function createBatchActivities(deps: BatchActivityDeps) {
  return {
    /** Validates an OpenAI batch's input file into its lines (all or none). */
    async prepareInferenceBatch(batchId: string): Promise<'ready' | 'failed' | 'ended'> {
      return prepareBatch({ repos: deps.repos, store: deps.store, maxLines: deps.maxLines, jsonLimits: deps.jsonLimits }, batchId);
    },

    /** Runs pending lines for a while, heartbeating; a cancel of the activity (or the worker's shutdown) stops it. */
    async runInferenceBatchLines(batchId: string): Promise<RunEnd> {
      const ctx = Context.current();
      ctx.heartbeat();
      return runBatchLines(deps.runner, batchId, { signal: ctx.cancellationSignal, heartbeat: () => ctx.heartbeat(), maxMs: deps.runMs ?? 5 * 60_000 });
    },

    /** The channels whose own batch API takes some of the batch's lines. */
    async planProviderLines(batchId: string): Promise<string[]> {
      return planProviderLines(deps.provider, batchId);
    },

    /** Holds and sends one channel's lines as one provider batch, created at most once. */
    async submitProviderBatch(batchId: string, channel: string): Promise<string | null> {
      return submitProviderBatch(deps.provider, batchId, channel, Context.current().cancellationSignal);
    },

    /** Waits for the provider batch, heartbeating, then settles or releases each of its lines. */
    async collectProviderBatch(batchId: string, channel: string): Promise<void> {
      const ctx = Context.current();
      // Heartbeats on a clock of their own: a poll may wait longer than the heartbeat timeout.
      const beat = setInterval(() => ctx.heartbeat(), 5000);
      try {
        await collectProviderBatch(deps.provider, batchId, channel, {
          signal: ctx.cancellationSignal,
          heartbeat: () => ctx.heartbeat(),
          pollMs: deps.providerPollMs ?? { min: 5000, max: 60_000 },
        });
      } finally {
        clearInterval(beat);
      }
    },

    /** Retention: output and error files past BATCH_FILE_RETENTION_DAYS. */
    async deleteExpiredBatchFiles(): Promise<number> {
      return deps.files.deleteExpired();
    },

    /** A batch whose workflow gave up on a fault: `failed`, with the reason. */
    async failInferenceBatch(batchId: string, reason: string): Promise<void> {
      await failBatch(deps.repos.batches, batchId, reason);
    },

    /** The batch's end: files, status, usage. */
    async finalizeInferenceBatch(batchId: string): Promise<{ status: string; api: string } | null> {
      return finalizeBatch({ repos: deps.repos, store: deps.store, retentionSeconds: deps.retentionSeconds }, batchId);
    },
  };
}
