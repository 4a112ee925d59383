import { ApplicationFailure, Context } from '@temporalio/activity';
import type { BatchOutcome, BatchStatus, ChunkRange, SourceChunkRange, StatusChunkRange } from '../domain/keys/batch-plan';
import { finishBatch, issueKeyChunk, rotateKeyChunk, setKeyStatusChunk, startGrace, tidyAfterBatch } from '../domain/keys/batch-steps';
import { DomainError } from '../domain/errors';
import type { KeyChangeBus } from '../domain/keys/key-change-bus';
import type { KeyCipher } from '../domain/keys/key-material';
import type { KeySealer } from '../domain/keys/key-sealer';
import type { Repositories } from '../domain/ports/repositories';

/** SQLSTATE classes 22 (data exception), 23 (integrity constraint) and 42 (syntax or access rule). */
function isPermanentSqlError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23|42)[0-9A-Z]{3}$/.test(code);
}

/**
 * Heartbeats while `fn` runs, so a worker that dies mid-chunk is noticed within the heartbeat timeout
 * and the chunk is retried elsewhere. Heartbeats carry no details: nothing of the keys leaves the activity.
 */
async function withHeartbeats<T>(fn: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timeoutMs = ctx.info.heartbeatTimeoutMs ?? 30_000;
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), Math.max(100, Math.min(5_000, timeoutMs / 3)));
  try {
    return await fn();
  } catch (err) {
    // A domain error (batch gone, already finished) or a statement Postgres rejects for what it is (bad data,
    // a violated constraint, an undefined column) will not get better by retrying: the batch fails with its
    // message. Anything else (database unreachable, connection reset, deadlock) is retried by Temporal.
    if (err instanceof DomainError) throw ApplicationFailure.nonRetryable(err.message, err.name);
    if (isPermanentSqlError(err)) throw ApplicationFailure.nonRetryable((err as Error).message, 'SqlError');
    throw err;
  } finally {
    clearInterval(timer);
  }
}

/** Bulk-key activities. Inputs and results are ids and counts only; key material stays in the database. */
export interface KeyActivityDeps {
  repos: Repositories;
  /**
   * The repositories of bulk key work (a chunk's transaction): over a small pool of their own in a worker on
   * PostgreSQL, so chunks queue among themselves, never in front of the api's or the other activities' queries.
   */
  bulkRepos: Repositories;
  cipher: KeyCipher;
  /** Makes the material of new keys in bulk (on threads of their own in a worker). */
  keySealer: KeySealer;
  /** Announces key status changes made by bulk operations, so api replicas drop cached keys. */
  keyChanges: KeyChangeBus;
}

export function createKeyActivities(deps: KeyActivityDeps) {
  return {
    async issueKeyChunk(r: ChunkRange): Promise<{ inserted: number; created: number }> {
      return withHeartbeats(() => issueKeyChunk(deps.bulkRepos, deps.keySealer, r));
    },

    async rotateKeyChunk(r: SourceChunkRange): Promise<{ inserted: number; created: number }> {
      return withHeartbeats(() => rotateKeyChunk(deps.bulkRepos, deps.cipher, r));
    },

    async setKeyStatusChunk(r: StatusChunkRange): Promise<{ changed: number; processed: number }> {
      return withHeartbeats(() => setKeyStatusChunk(deps.bulkRepos, deps.keyChanges, r));
    },

    async startKeyBatchGrace(input: { batchId: number; endsAtMs: number }): Promise<void> {
      await startGrace(deps.repos, input.batchId, input.endsAtMs);
    },

    async finishKeyBatch(input: {
      batchId: number;
      status: Exclude<BatchStatus, 'running'>;
      error?: string | null;
    }): Promise<BatchOutcome> {
      if (input.status === 'completed') {
        // Best effort: a table left untidy is slower to list, never wrong; the batch completes either way.
        await withHeartbeats(() => tidyAfterBatch(deps.bulkRepos, input.batchId)).catch((err) =>
          Context.current().log.warn('tidying the keys table after a batch failed', { batchId: input.batchId, error: (err as Error).message }),
        );
      }
      return finishBatch(deps.repos, input);
    },
  };
}
