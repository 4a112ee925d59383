import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

/** One pass of the schedule batch-file-retention:<task queue>: deletes batch files past their expiry; how many. */
export async function batchFileRetentionWorkflow(): Promise<number> {
  const { deleteExpiredBatchFiles } = proxyActivities<Pick<Activities, 'deleteExpiredBatchFiles'>>({
    startToCloseTimeout: '30 minutes',
    retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 5 },
  });
  return deleteExpiredBatchFiles();
}
