// How often a task's upstream is polled. Pure (no Node built-ins): the workflow's polling loop of older histories
// and the task runner compute the next wait with the same function.

/** Poll interval bounds, ms. */
export interface PollTiming {
  minMs: number;
  maxMs: number;
}

/** The next wait: the upstream's hint within our bounds, otherwise backing off towards the longest interval. */
export function nextPollWait(waitMs: number, timing: PollTiming, retryAfterSeconds?: number): number {
  const hinted = retryAfterSeconds !== undefined ? retryAfterSeconds * 1000 : Math.round(waitMs * 1.5);
  return Math.min(Math.max(timing.minMs, timing.maxMs), Math.max(timing.minMs, hinted));
}
