import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  defineSignal,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { RetryPolicy } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { nextPollWait } from '../domain/video/poll-timing';
import type { VideoFinish, VideoRunEnd } from '../domain/video/task-runner';
import type { VideoWorkflowInput } from '../domain/video/video-service';

// Workflow video:<task id>: the upstream part (submit, wait for a terminal state, keep the finished file) until the
// deadline or a cancel; then settle (completed) or release (anything else) exactly once. Inputs are ids and timings.

/**
 * From this patch on, the upstream part is one heartbeating activity and the task's end a local activity: about 14
 * history events and 2 workflow tasks per task, whatever its length, where a timer and an activity per poll took
 * 61 events for a task of a few minutes. Histories from before it replay through `pollLoop`.
 */
const ONE_ACTIVITY = 'video-upstream-in-one-activity';

export const cancelVideoSignal = defineSignal('cancelVideo');

type VideoActivities = Pick<Activities, 'submitVideoUpstream' | 'pollVideoUpstream' | 'runVideoUpstream' | 'cancelVideoUpstream' | 'endVideoTask' | 'videoWebhook'>;

const RETRY: RetryPolicy = { initialInterval: '1 second', maximumInterval: '30 seconds', backoffCoefficient: 2, nonRetryableErrorTypes: ['VideoUpstreamRejected'] };

/** How long the copy of a finished file is retried before the task completes on the upstream's link. */
const DEFAULT_RESULT_WINDOW_MS = 10 * 60_000;

const TIMEOUT: VideoFinish = { status: 'failed', code: 'timeout', message: 'The task did not finish within its deadline.' };
const CANCELLED: VideoFinish = { status: 'failed', code: 'cancelled', message: 'The task was cancelled.' };

/**
 * Upstream calls: retried while transient, never beyond the task's deadline. An attempt lost with its worker is
 * tried again after `attemptMs` (default 1 minute).
 */
function upstreamActivities(untilMs: number, attemptMs = 60_000): VideoActivities {
  const left = Math.max(1000, untilMs - Date.now());
  return proxyActivities<VideoActivities>({ startToCloseTimeout: Math.min(attemptMs, left), scheduleToCloseTimeout: left, retry: RETRY });
}

/**
 * Bookkeeping that must happen whatever the deadline: retried for about half an hour (a database that restarts),
 * never forever; a fault no retry can fix is not retried (the worker marks it non-retryable) and fails the workflow.
 */
const BOOKKEEPING_RETRY: RetryPolicy = { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 40 };

const bookkeeping = proxyActivities<VideoActivities>({ startToCloseTimeout: '1 minute', retry: BOOKKEEPING_RETRY });

/** The same, run by the worker inside the workflow task: a marker in history rather than three events and a task. */
const localBookkeeping = proxyLocalActivities<VideoActivities>({ startToCloseTimeout: '1 minute', retry: BOOKKEEPING_RETRY });

/**
 * The upstream part in one activity, until its end or a cancel: `onCancel` receives what cancels it (the activity
 * is then cancelled, not awaited). The activity stops polling at the deadline itself; its own timeout leaves room
 * for the copy of a file that finished just before it. A worker lost mid-way is noticed after `upstreamAttemptMs`
 * without a heartbeat.
 */
async function runUpstream(input: VideoWorkflowInput, onCancel: (cancel: () => void) => void): Promise<VideoRunEnd | 'cancelled'> {
  const resultWindowMs = input.resultWindowMs ?? DEFAULT_RESULT_WINDOW_MS;
  const left = Math.max(1000, input.deadlineAtMs - Date.now()) + resultWindowMs + 60_000;
  const { runVideoUpstream } = proxyActivities<VideoActivities>({
    startToCloseTimeout: left,
    scheduleToCloseTimeout: left,
    heartbeatTimeout: input.upstreamAttemptMs ?? 60_000,
    retry: RETRY,
  });
  const minMs = input.pollMs.min;
  const timing = { minMs, maxMs: Math.max(minMs, input.pollMs.max), deadlineAtMs: input.deadlineAtMs, resultWindowMs };
  const scope = new CancellationScope();
  let cancelled = false;
  onCancel(() => {
    cancelled = true;
    scope.cancel();
  });
  try {
    return await scope.run(() => runVideoUpstream(input.taskId, timing));
  } catch (err) {
    if (cancelled && isCancellation(err)) return 'cancelled';
    throw err;
  }
}

/** Polling from the workflow, a timer and an activity per poll: how histories recorded before ONE_ACTIVITY ran. */
async function pollLoop(input: VideoWorkflowInput, upstreamId: string, isCancelled: () => boolean): Promise<VideoFinish> {
  const { taskId, deadlineAtMs } = input;
  const minMs = input.pollMs.min;
  const maxMs = Math.max(minMs, input.pollMs.max);
  let waitMs = minMs;
  for (;;) {
    const left = deadlineAtMs - Date.now();
    if (!isCancelled() && left > 0) await condition(isCancelled, Math.min(waitMs, left));
    if (isCancelled()) return CANCELLED;
    if (Date.now() >= deadlineAtMs) return TIMEOUT;
    const s = await upstreamActivities(deadlineAtMs, input.upstreamAttemptMs).pollVideoUpstream(taskId, upstreamId);
    if (s.state === 'completed') return { status: 'completed' };
    if (s.state === 'failed') return { status: 'failed', code: s.error?.code ?? 'generation_failed', message: s.error?.message ?? 'The video generation failed upstream.' };
    waitMs = nextPollWait(waitMs, { minMs, maxMs }, s.retryAfterSeconds);
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

function outcomeOf(end: VideoRunEnd | 'cancelled'): VideoFinish {
  if (end === 'cancelled') return CANCELLED;
  if (end.state === 'completed') return { status: 'completed' };
  if (end.state === 'timeout') return TIMEOUT;
  return { status: 'failed', code: end.error.code, message: end.error.message };
}

export async function videoTaskWorkflow(input: VideoWorkflowInput): Promise<VideoFinish> {
  let cancelled = false;
  let cancelRunning: (() => void) | null = null;
  setHandler(cancelVideoSignal, () => {
    cancelled = true;
    cancelRunning?.();
  });
  const { taskId, deadlineAtMs } = input;

  const current = patched(ONE_ACTIVITY);
  let upstreamId: string | null = null;
  let outcome: VideoFinish;
  try {
    if (current) {
      outcome = cancelled ? CANCELLED : outcomeOf(await runUpstream(input, (cancel) => (cancelRunning = cancel)));
    } else {
      upstreamId = await upstreamActivities(deadlineAtMs, input.upstreamAttemptMs).submitVideoUpstream(taskId);
      outcome = cancelled ? CANCELLED : await pollLoop(input, upstreamId, () => cancelled);
    }
  } catch (err) {
    const refused = rejection(err);
    if (refused) outcome = { status: 'failed', code: refused.code, message: refused.message };
    else if (cancelled) outcome = CANCELLED;
    else if (Date.now() >= deadlineAtMs) outcome = TIMEOUT;
    // Retries gave up on something that is not the upstream's refusal: the task fails, the hold is released.
    else outcome = { status: 'failed', code: 'upstream_error', message: 'The upstream could not be reached.' };
  }
  const bookkeeper = current ? localBookkeeping : bookkeeping;
  if (outcome.status === 'failed' && (outcome.code === 'timeout' || outcome.code === 'cancelled') && (upstreamId || current)) {
    // Without an id, the one the task row recorded (if the submit got that far).
    await bookkeeper.cancelVideoUpstream(taskId, upstreamId).catch(() => undefined);
  }
  await bookkeeper.endVideoTask(taskId, outcome);
  if (input.webhook) {
    // The delivery outlives this workflow (retries for up to a day): a child of its own, left running.
    const hook = await bookkeeper.videoWebhook(taskId);
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
