import { Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import { finalizeBatch } from '../domain/batches/finalize';
import { prepareBatch } from '../domain/batches/prepare';
import { type RunEnd, runBatchLines, type RunnerDeps } from '../domain/batches/runner';
import type { BatchFiles } from '../domain/batches/files';
import type { VideoObjectStore } from '../domain/video/store';

/** What batch inference's activities need (the composition root builds it; the runner's relay engine is the process's). */
export interface BatchActivityDeps {
  db: Pool;
  store: VideoObjectStore;
  runner: RunnerDeps;
  files: BatchFiles;
  maxLines: number;
  retentionSeconds: number;
  /** How long one run of lines goes on before the workflow starts the next (default 5 minutes). */
  runMs?: number;
}

/** Batch inference: thin wrappers over src/domain/batches; each honours the activity's cancellation. */
export function createBatchActivities(deps: { inferenceBatches?: BatchActivityDeps | null }) {
  const need = (): BatchActivityDeps => {
    if (!deps.inferenceBatches) throw new Error('this worker was built without batch inference');
    return deps.inferenceBatches;
  };
  return {
    /** Validates an OpenAI batch's input file into its lines (all or none). */
    async prepareInferenceBatch(batchId: string): Promise<'ready' | 'failed' | 'ended'> {
      const d = need();
      return prepareBatch({ db: d.db, store: d.store, maxLines: d.maxLines }, batchId);
    },

    /** Runs pending lines for a while, heartbeating; a cancel of the activity (or the worker's shutdown) stops it. */
    async runInferenceBatchLines(batchId: string): Promise<RunEnd> {
      const d = need();
      const ctx = Context.current();
      ctx.heartbeat();
      return runBatchLines(d.runner, batchId, { signal: ctx.cancellationSignal, heartbeat: () => ctx.heartbeat(), maxMs: d.runMs ?? 5 * 60_000 });
    },

    /** Retention: output and error files past BATCH_FILE_RETENTION_DAYS. */
    async deleteExpiredBatchFiles(): Promise<number> {
      return need().files.deleteExpired();
    },

    /** The batch's end: files, status, usage. */
    async finalizeInferenceBatch(batchId: string): Promise<{ status: string; api: string } | null> {
      const d = need();
      return finalizeBatch({ db: d.db, store: d.store, retentionSeconds: d.retentionSeconds }, batchId);
    },
  };
}
