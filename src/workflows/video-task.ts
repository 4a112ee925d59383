import { ActivityFailure, ApplicationFailure, condition, defineSignal, ParentClosePolicy, proxyActivities, setHandler, startChild } from '@temporalio/workflow';
import type { RetryPolicy } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { VideoFinish } from '../activities/video';
import type { VideoWorkflowInput } from '../domain/video/video-service';

// Workflow video:<task id>: submit upstream, poll with backoff until a terminal state, the deadline or a cancel;
// then settle (completed) or release (anything else) exactly once. Inputs are ids and timings only.

export const cancelVideoSignal = defineSignal('cancelVideo');

type VideoActivities = Pick<Activities, 'submitVideoUpstream' | 'pollVideoUpstream' | 'cancelVideoUpstream' | 'endVideoTask' | 'videoWebhook'>;

const RETRY: RetryPolicy = { initialInterval: '1 second', maximumInterval: '30 seconds', backoffCoefficient: 2, nonRetryableErrorTypes: ['VideoUpstreamRejected'] };

/**
 * Upstream calls: retried while transient, never beyond the task's deadline. An attempt lost with its worker is
 * tried again after `attemptMs` (default 1 minute).
 */
function upstreamActivities(untilMs: number, attemptMs = 60_000): VideoActivities {
  const left = Math.max(1000, untilMs - Date.now());
  return proxyActivities<VideoActivities>({ startToCloseTimeout: Math.min(attemptMs, left), scheduleToCloseTimeout: left, retry: RETRY });
}

/** Bookkeeping that must happen whatever the deadline: retried until it succeeds. */
const bookkeeping = proxyActivities<VideoActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
});

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
  const TIMEOUT: VideoFinish = { status: 'failed', code: 'timeout', message: 'The task did not finish within its deadline.' };
  const CANCELLED: VideoFinish = { status: 'failed', code: 'cancelled', message: 'The task was cancelled.' };

  let upstreamId: string | null = null;
  let outcome: VideoFinish;
  try {
    upstreamId = await upstreamActivities(deadlineAtMs, input.upstreamAttemptMs).submitVideoUpstream(taskId);
    let waitMs = minMs;
    for (;;) {
      const left = deadlineAtMs - Date.now();
      if (!cancelled && left > 0) await condition(() => cancelled, Math.min(waitMs, left));
      if (cancelled) {
        outcome = CANCELLED;
        break;
      }
      if (Date.now() >= deadlineAtMs) {
        outcome = TIMEOUT;
        break;
      }
      const s = await upstreamActivities(deadlineAtMs, input.upstreamAttemptMs).pollVideoUpstream(taskId, upstreamId);
      if (s.state === 'completed') {
        outcome = { status: 'completed' };
        break;
      }
      if (s.state === 'failed') {
        outcome = { status: 'failed', code: s.error?.code ?? 'generation_failed', message: s.error?.message ?? 'The video generation failed upstream.' };
        break;
      }
      // The upstream's hint within our bounds; otherwise back off towards the longest interval.
      const hinted = s.retryAfterSeconds !== undefined ? s.retryAfterSeconds * 1000 : Math.round(waitMs * 1.5);
      waitMs = Math.min(maxMs, Math.max(minMs, hinted));
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
