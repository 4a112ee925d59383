import {
  ActivityCancellationType,
  CancellationScope,
  isCancellation,
  makeContinueAsNewFunc,
  proxyActivities,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { failureMessage } from './failure-message';
import type { BatchOutcome, ChunkTuning, IssuePlan, RotatePlan, StatusPlan } from '../domain/keys/batch-plan';

// Bulk key rollouts, workflow keys:<batch id>. The plan holds ids and counts only; keys are generated
// and stored inside the chunk activities, so no key material ever enters the workflow history.

type KeyActivities = Pick<Activities,
  'issueKeyChunk' | 'rotateKeyChunk' | 'setKeyStatusChunk' | 'startKeyBatchGrace' | 'finishKeyBatch'>;

/** A chunk whose fault repeats this often fails the batch (`failed`, with the reason) instead of retrying forever. */
const MAX_ATTEMPTS = 10;

function keyActivities(t: ChunkTuning): KeyActivities {
  return proxyActivities<KeyActivities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: t.heartbeatTimeoutMs,
    retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: MAX_ATTEMPTS },
    // On cancel, wait for a running chunk to commit or stop, so the counts recorded at the end are exact.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
}

/**
 * Runs `chunk` over `next..end` in steps of chunkSize, up to `width` chunks at once: a new one starts as soon as
 * one ends. When this run has done its share (or Temporal suggests it), no more start and the running ones are
 * awaited, so everything before the returned index is done. Returns null when done, or the index to go on from
 * when this run should continue as new.
 */
async function eachChunk(
  p: ChunkTuning & { next: number; end: number },
  chunk: (from: number, to: number) => Promise<unknown>,
  done = { chunks: 0 },
  width = 1,
): Promise<number | null> {
  let next = p.next;
  const running = new Set<Promise<void>>();
  const shareDone = () => done.chunks + running.size >= p.continueAsNewAfterChunks || workflowInfo().continueAsNewSuggested;
  let failure: { err: unknown } | null = null;
  for (;;) {
    while (!failure && running.size < width && next <= p.end && !(done.chunks + running.size > 0 && shareDone())) {
      const to = Math.min(p.end, next + p.chunkSize - 1);
      const run: Promise<void> = chunk(next, to).then(
        () => {
          done.chunks++;
          running.delete(run);
        },
        (err: unknown) => {
          failure ??= { err };
          running.delete(run);
        },
      );
      running.add(run);
      next = to + 1;
    }
    if (running.size === 0) break;
    await Promise.race(running);
  }
  if (failure) throw (failure as { err: unknown }).err;
  return next <= p.end ? next : null;
}

/**
 * The life cycle shared by every batch workflow: `body` returns the plan to continue as new with, or null
 * when the work is done. Completion, failure and cancellation are each recorded once on the batch row.
 */
async function runBatch<P extends ChunkTuning & { batchId: number }>(
  plan: P,
  body: (acts: KeyActivities) => Promise<P | null>,
): Promise<BatchOutcome> {
  const acts = keyActivities(plan);
  let continueWith: P | null;
  try {
    continueWith = await body(acts);
    if (!continueWith) return await acts.finishKeyBatch({ batchId: plan.batchId, status: 'completed' });
  } catch (err) {
    const cancelled = isCancellation(err);
    await CancellationScope.nonCancellable(() =>
      acts.finishKeyBatch({
        batchId: plan.batchId,
        status: cancelled ? 'cancelled' : 'failed',
        error: cancelled ? null : failureMessage(err),
      }),
    );
    throw err;
  }
  // Outside the try: continuing as new is a thrown signal, not a failure.
  return makeContinueAsNewFunc<(p: P) => Promise<BatchOutcome>>({ memo: workflowInfo().memo })(continueWith);
}

/** Issues keys 1..end of an issue batch, chunk by chunk. */
export async function keysIssueWorkflow(plan: IssuePlan): Promise<BatchOutcome> {
  return runBatch(plan, async (acts) => {
    // Issue chunks write disjoint key ranges: they may run side by side.
    const next = await eachChunk(plan, (from, to) => acts.issueKeyChunk({ batchId: plan.batchId, from, to }), undefined, plan.parallelChunks ?? 1);
    return next === null ? null : { ...plan, next };
  });
}

/** Enables or disables every key of the source batch. */
export async function keysStatusWorkflow(plan: StatusPlan): Promise<BatchOutcome> {
  return runBatch(plan, async (acts) => {
    const next = await eachChunk(plan, (from, to) =>
      acts.setKeyStatusChunk({
        batchId: plan.batchId, sourceBatchId: plan.sourceBatchId, from, to, status: plan.status, phase: 'updating',
      }),
    );
    return next === null ? null : { ...plan, next };
  });
}

/**
 * Rotation: one replacement per key of the source batch, then a grace period on a durable timer (a restart
 * of every process changes nothing), then the old keys are disabled. Cancelled before the disabling phase,
 * the old keys stay enabled.
 */
export async function keysRotateWorkflow(plan: RotatePlan): Promise<BatchOutcome> {
  return runBatch(plan, async (acts) => {
    const done = { chunks: 0 };
    let p = plan;
    if (p.phase === 'issuing') {
      const next = await eachChunk(p, (from, to) =>
        acts.rotateKeyChunk({ batchId: p.batchId, sourceBatchId: p.sourceBatchId, from, to }), done);
      if (next !== null) return { ...p, next };
      p = { ...p, phase: 'grace', next: 1 };
    }
    if (p.phase === 'grace') {
      if (p.graceSeconds > 0) {
        await acts.startKeyBatchGrace({ batchId: p.batchId, endsAtMs: Date.now() + p.graceSeconds * 1000 });
        await sleep(p.graceSeconds * 1000);
      }
      p = { ...p, phase: 'disabling', next: 1 };
    }
    const next = await eachChunk(p, (from, to) =>
      acts.setKeyStatusChunk({
        batchId: p.batchId, sourceBatchId: p.sourceBatchId, from, to, status: 2, phase: 'disabling',
      }), done);
    return next === null ? null : { ...p, next };
  });
}
