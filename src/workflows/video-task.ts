import { ActivityFailure, ApplicationFailure, CancellationScope, condition, defineSignal, ParentClosePolicy, patched, proxyActivities, setHandler, startChild } from '@temporalio/workflow';
import type { RetryPolicy } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { VideoFinish, VideoPoll } from '../domain/video/task-runner';
import type { VideoWorkflowInput } from '../domain/video/video-service';

// Workflow video:<task id>: submit upstream, wait (one activity polling with backoff) for a terminal state, the
// deadline or a cancel; then settle (completed) or release (anything else) exactly once. Inputs are ids and
// timings only.

/**
 * Waiting is one heartbeating activity rather than a timer and an activity per poll: about a third of the history
 * events and workflow tasks per task. Histories from before it replay through the polling loop.
 */
const AWAIT_IN_ACTIVITY = 'video-await-in-activity';

export const cancelVideoSignal = defineSignal('cancelVideo');

type VideoActivities = Pick<
  Activities,
  'submitVideoUpstream' | 'pollVideoUpstream' | 'awaitVideoUpstream' | 'cancelVideoUpstream' | 'keepVideoResult' | 'recordVideoFallback' | 'endVideoTask' | 'videoWebhook'
>;

const RETRY: RetryPolicy = { initialInterval: '1 second', maximumInterval: '30 seconds', backoffCoefficient: 2, nonRetryableErrorTypes: ['VideoUpstreamRejected'] };

/**
 * Upstream calls: retried while transient, never beyond the task's deadline. An attempt lost with its worker is
 * tried again after `attemptMs` (default 1 minute).
 */
function upstreamActivities(untilMs: number, attemptMs = 60_000): VideoActivities {
  const left = Math.max(1000, untilMs - Date.now());
  return proxyActivities<VideoActivities>({ startToCloseTimeout: Math.min(attemptMs, left), scheduleToCloseTimeout: left, retry: RETRY });
}

/**
 * The wait for the upstream's end: until the deadline at most, its worker's loss noticed after `attemptMs` without
 * a heartbeat (the activity heartbeats every poll).
 */
function waitingActivity(untilMs: number, attemptMs = 60_000): VideoActivities {
  const left = Math.max(1000, untilMs - Date.now());
  return proxyActivities<VideoActivities>({ startToCloseTimeout: left, scheduleToCloseTimeout: left, heartbeatTimeout: attemptMs, retry: RETRY });
}

/** Waits in one activity until the upstream's end, or a cancel (the activity is then cancelled, not awaited). */
async function awaitUpstream(input: VideoWorkflowInput, upstreamId: string, timing: { minMs: number; maxMs: number }, isCancelled: () => boolean): Promise<VideoPoll | 'cancelled'> {
  const scope = new CancellationScope();
  const waiting = scope.run(() => waitingActivity(input.deadlineAtMs, input.upstreamAttemptMs).awaitVideoUpstream(input.taskId, upstreamId, timing));
  const ended = await Promise.race([waiting, condition(isCancelled).then(() => 'cancelled' as const)]);
  if (ended === 'cancelled') {
    scope.cancel();
    waiting.catch(() => undefined);
  }
  return ended;
}

/** How long the copy of a finished file is retried before the task completes on the upstream's link. */
const DEFAULT_RESULT_WINDOW_MS = 10 * 60_000;

/**
 * Copies the finished file into the object store, retried for the input's window; when it gives up the task still
 * completes, on the upstream's link, and the reason is recorded (gateway_video_results{state="fallback"}).
 */
async function keepResult(input: VideoWorkflowInput): Promise<void> {
  const windowMs = input.resultWindowMs ?? DEFAULT_RESULT_WINDOW_MS;
  const keeping = proxyActivities<VideoActivities>({
    startToCloseTimeout: windowMs,
    scheduleToCloseTimeout: windowMs,
    heartbeatTimeout: input.upstreamAttemptMs ?? 60_000,
    retry: { ...RETRY, nonRetryableErrorTypes: ['VideoUpstreamRejected', 'VideoResultRefused'] },
  });
  try {
    await keeping.keepVideoResult(input.taskId);
  } catch (err) {
    let e: unknown = err;
    while (e instanceof ActivityFailure) e = e.cause;
    const reason = e instanceof ApplicationFailure && e.type === 'VideoResultRefused' ? e.message : 'the copy did not complete within its window';
    await bookkeeping.recordVideoFallback(input.taskId, reason);
  }
}

/** Bookkeeping that must happen whatever the deadline: retried until it succeeds. */
const bookkeeping = proxyActivities<VideoActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
});

const TIMEOUT: VideoFinish = { status: 'failed', code: 'timeout', message: 'The task did not finish within its deadline.' };
const CANCELLED: VideoFinish = { status: 'failed', code: 'cancelled', message: 'The task was cancelled.' };

/** Polling from the workflow, a timer and an activity per poll: how histories recorded before AWAIT_IN_ACTIVITY ran. */
async function pollLoop(input: VideoWorkflowInput, upstreamId: string, timing: { minMs: number; maxMs: number }, isCancelled: () => boolean): Promise<VideoFinish> {
  const { taskId, deadlineAtMs } = input;
  let waitMs = timing.minMs;
  for (;;) {
    const left = deadlineAtMs - Date.now();
    if (!isCancelled() && left > 0) await condition(isCancelled, Math.min(waitMs, left));
    if (isCancelled()) return CANCELLED;
    if (Date.now() >= deadlineAtMs) return TIMEOUT;
    const s = await upstreamActivities(deadlineAtMs, input.upstreamAttemptMs).pollVideoUpstream(taskId, upstreamId);
    if (s.state === 'completed') return { status: 'completed' };
    if (s.state === 'failed') return { status: 'failed', code: s.error?.code ?? 'generation_failed', message: s.error?.message ?? 'The video generation failed upstream.' };
    const hinted = s.retryAfterSeconds !== undefined ? s.retryAfterSeconds * 1000 : Math.round(waitMs * 1.5);
    waitMs = Math.min(timing.maxMs, Math.max(timing.minMs, hinted));
  }
}

/** The innermost ApplicationFailure of an activity failure: the upstream's refusal, if that is what it was. */
function rejection(err: unknown): { code: string; message: string } | null {
  let e: unknown = err;
  while (e instanceof ActivityFailure) e = e.cause;
  if (e instanceof ApplicationFailure && e.type === 'VideoUpstreamRejected') {
    const details = (e.details?.[0] ?? {}) as { code?: string };
    return { code: details.code ?? 'upstream_rejected', message: e.message };
  }
  return null;
}

export async function videoTaskWorkflow(input: VideoWorkflowInput): Promise<VideoFinish> {
  let cancelled = false;
  setHandler(cancelVideoSignal, () => {
    cancelled = true;
  });
  const { taskId, deadlineAtMs } = input;
  const minMs = input.pollMs.min;
  const maxMs = Math.max(minMs, input.pollMs.max);

  let upstreamId: string | null = null;
  let outcome: VideoFinish;
  let current = false;
  try {
    upstreamId = await upstreamActivities(deadlineAtMs, input.upstreamAttemptMs).submitVideoUpstream(taskId);
    if (cancelled) {
      outcome = CANCELLED;
    } else if ((current = patched(AWAIT_IN_ACTIVITY))) {
      const s = await awaitUpstream(input, upstreamId, { minMs, maxMs }, () => cancelled);
      if (s === 'cancelled') outcome = CANCELLED;
      else if (s.state === 'completed') outcome = { status: 'completed' };
      else outcome = { status: 'failed', code: s.error?.code ?? 'generation_failed', message: s.error?.message ?? 'The video generation failed upstream.' };
    } else {
      outcome = await pollLoop(input, upstreamId, { minMs, maxMs }, () => cancelled);
    }
  } catch (err) {
    const refused = rejection(err);
    if (refused) outcome = { status: 'failed', code: refused.code, message: refused.message };
    else if (cancelled) outcome = CANCELLED;
    else if (Date.now() >= deadlineAtMs) outcome = TIMEOUT;
    // Retries gave up on something that is not the upstream's refusal: the task fails, the hold is released.
    else outcome = { status: 'failed', code: 'upstream_error', message: 'The upstream could not be reached.' };
  }
  if (outcome.status === 'failed' && (outcome.code === 'timeout' || outcome.code === 'cancelled') && upstreamId) {
    await bookkeeping.cancelVideoUpstream(taskId, upstreamId).catch(() => undefined);
  }
  // Kept before the task reads completed, so its link never depends on the upstream's from then on.
  if (current && outcome.status === 'completed') await keepResult(input);
  await bookkeeping.endVideoTask(taskId, outcome);
  if (input.webhook) {
    // The delivery outlives this workflow (retries for up to a day): a child of its own, left running.
    const hook = await bookkeeping.videoWebhook(taskId);
    if (hook) {
      await startChild('deliverWebhook', {
        workflowId: `webhook:${taskId}`,
        args: [{ ...hook, retry: input.webhookRetry }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
    }
  }
  return outcome;
}
