import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

/**
 * One retention pass, started by the schedule video-retention:<task queue> (src/temporal/video-retention-schedule.ts):
 * deletes the stored copies of finished videos older than the retention; resolves with how many it deleted.
 */
export async function videoRetentionWorkflow(input: { retentionSeconds: number }): Promise<number> {
  const { deleteExpiredVideoResults } = proxyActivities<Pick<Activities, 'deleteExpiredVideoResults'>>({
    startToCloseTimeout: '30 minutes',
    retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 5 },
  });
  return deleteExpiredVideoResults(input.retentionSeconds);
}
