import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { databaseNow } = proxyActivities<Activities>({ startToCloseTimeout: '10 seconds' });

/** Smallest end-to-end proof that workflows, activities and the database are wired. */
export async function pingWorkflow(name: string): Promise<{ greeting: string; databaseTime: string }> {
  return { greeting: `pong ${name}`, databaseTime: await databaseNow() };
}
