import { ApplicationFailure, CompleteAsyncError, Context } from '@temporalio/activity';
import { VideoRejectedError, type RunTiming, type VideoFinish, type VideoPoll, type VideoRunEnd, type VideoTaskRunner } from '../domain/video/task-runner';
import type { ParkedActivities } from '../temporal/parked-activities';

export type { VideoFinish, VideoPoll, VideoRunEnd } from '../domain/video/task-runner';

/** The upstream refused for good: the workflow ends the task with the refusal's code, no retry. */
export const VIDEO_REJECTED = 'VideoUpstreamRejected';

/** The running activity's cancellation: an upstream call in flight stops when the workflow cancels the activity. */
const cancelled = (): AbortSignal => Context.current().cancellationSignal;

/** What the workflow sees of a failure: the upstream's refusal as a non-retryable failure naming its code. */
function asFailure(err: unknown): unknown {
  return err instanceof VideoRejectedError ? ApplicationFailure.nonRetryable(err.message, VIDEO_REJECTED, { code: err.code }) : err;
}

async function run<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw asFailure(err);
  }
}

/** Often enough for the activity's heartbeat timeout (a third of it, at most every 20 s). */
function heartbeatEveryMs(ctx: Context): number {
  return Math.max(100, Math.min(20_000, (ctx.info.heartbeatTimeoutMs ?? 15_000) / 3));
}

/**
 * Runs `work` heartbeating: a worker lost mid-wait or mid-copy is noticed at the heartbeat timeout, and a cancel
 * reaches the work's signal. Parked (the process runs it and completes the activity asynchronously) when the
 * worker has `parked`; in the activity otherwise.
 */
async function heartbeating<T>(parked: ParkedActivities | null | undefined, work: (signal: AbortSignal, beat: (details?: unknown) => void) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const everyMs = heartbeatEveryMs(ctx);
  if (parked?.park(ctx.info.taskToken, everyMs, work, asFailure)) throw new CompleteAsyncError();
  let details: unknown;
  const timer = setInterval(() => ctx.heartbeat(details), everyMs);
  try {
    // Work reports progress as it goes; the timer sends it (the SDK throttles what reaches the server anyway).
    return await run(() => work(ctx.cancellationSignal, (d) => (details = d)));
  } finally {
    clearInterval(timer);
  }
}

/** Activities of workflow video:<task id>: thin wrappers over the task runner (src/domain/video/task-runner.ts). */
export interface VideoActivityDeps {
  /** Runs video tasks: submit, wait, end. */
  videoRunner: VideoTaskRunner;
  /** Where a video task's wait runs outside the SDK (completed asynchronously); without it, in the activity. */
  parkedActivities?: ParkedActivities | null;
}

export function createVideoActivities(deps: VideoActivityDeps) {
  const runner = deps.videoRunner;
  return {
    submitVideoUpstream: (taskId: string): Promise<string> => run(() => runner.submitUpstream(taskId, cancelled())),

    /** One poll (workflows that poll from the workflow: histories recorded before the waiting activity). */
    pollVideoUpstream: (taskId: string, upstreamId: string): Promise<VideoPoll> => run(() => runner.pollOnce(taskId, upstreamId, cancelled())),

    /**
     * The upstream part of a task in one activity (submit, wait, keep the file), heartbeating: a worker lost on the
     * way is noticed at the heartbeat timeout, and another carries on from what the task row recorded.
     */
    runVideoUpstream: (taskId: string, timing: RunTiming): Promise<VideoRunEnd> =>
      heartbeating(deps.parkedActivities, (signal, beat) => runner.runUpstream(taskId, timing, signal, beat)),

    /** `upstreamId` null: the one the task row recorded, if any. */
    cancelVideoUpstream: (taskId: string, upstreamId: string | null): Promise<void> => run(() => runner.cancelUpstream(taskId, upstreamId, cancelled())),

    /** Retention: deletes stored copies older than `retentionSeconds`. */
    deleteExpiredVideoResults: (retentionSeconds: number): Promise<number> => runner.deleteExpiredResults(retentionSeconds, cancelled()),

    endVideoTask: (taskId: string, outcome: VideoFinish): Promise<void> => runner.endTask(taskId, outcome),
  };
}
