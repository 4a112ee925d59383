import type { Client } from '@temporalio/client';
import { upsertSchedule } from './video-retention-schedule';

/** The hourly sweep of expired batch output files (BATCH_FILE_RETENTION_DAYS), one schedule per task queue. */
export const batchFileRetentionScheduleId = (taskQueue: string) => `batch-file-retention:${taskQueue}`;

export async function ensureBatchFileRetentionSchedule(client: Client, taskQueue: string): Promise<void> {
  await upsertSchedule(client, batchFileRetentionScheduleId(taskQueue), {
    type: 'startWorkflow',
    workflowType: 'batchFileRetentionWorkflow',
    workflowId: `batch-file-retention-pass:${taskQueue}`,
    taskQueue,
    args: [],
  });
}
