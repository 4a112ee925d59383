import { ScheduleAlreadyRunning, ScheduleNotFoundError, type Client } from '@temporalio/client';
import type { videoRetentionWorkflow } from '../workflows/video-retention';

/** The schedule of a deployment's retention passes (one per task queue, so deployments sharing a namespace keep apart). */
export const retentionScheduleId = (taskQueue: string) => `video-retention:${taskQueue}`;

/** How often retention runs: expired copies outlive their retention by at most this. */
const EVERY = '1 hour';

/**
 * Creates the retention schedule, or brings an existing one to the current retention (a worker started with
 * another VIDEO_RETENTION_DAYS updates it). Idempotent: every worker calls it at start.
 */
export async function ensureRetentionSchedule(client: Client, taskQueue: string, retentionSeconds: number): Promise<void> {
  const scheduleId = retentionScheduleId(taskQueue);
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'videoRetentionWorkflow',
    workflowId: `video-retention-pass:${taskQueue}`,
    taskQueue,
    args: [{ retentionSeconds }] as Parameters<typeof videoRetentionWorkflow>,
  };
  await upsertSchedule(client, scheduleId, action);
}

/** Creates an hourly schedule, or brings an existing one to `action` (skipping a pass while the last one runs). */
export async function upsertSchedule(client: Client, scheduleId: string, action: Parameters<Client['schedule']['create']>[0]['action']): Promise<void> {
  try {
    await client.schedule.create({ scheduleId, spec: { intervals: [{ every: EVERY }] }, action, policies: { overlap: 'SKIP' } });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec: { intervals: [{ every: EVERY }] }, action }));
  }
}

/** What the console shows of retention: the schedule's next pass and its last one. */
export interface RetentionScheduleState {
  scheduleId: string;
  nextRunAt: Date | null;
  lastRunAt: Date | null;
  /** Passes the schedule has started. */
  runs: number;
}

export async function describeRetentionSchedule(client: Client, taskQueue: string): Promise<RetentionScheduleState | null> {
  const scheduleId = retentionScheduleId(taskQueue);
  try {
    const d = await client.schedule.getHandle(scheduleId).describe();
    const last = d.info.recentActions.at(-1);
    return { scheduleId, nextRunAt: d.info.nextActionTimes[0] ?? null, lastRunAt: last?.takenAt ?? null, runs: d.info.numActionsTaken };
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return null;
    throw err;
  }
}
