import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { exportWorkflowHistory } from '../../src/temporal/history';

/**
 * The history of batch:<id> as the audit export writes it. With RECORD_HISTORIES=1 it is also written to
 * test/histories/<name>.json, where workflow-replay.test.ts replays every committed history against the current code:
 *
 *   RECORD_HISTORIES=1 npx jest --selectProjects=postgres --testPathPatterns inference-batches
 */
export async function batchHistory(client: Client, batchId: string, name: string): Promise<string> {
  const text = await exportWorkflowHistory(client, `batch:${batchId}`, undefined, { allRuns: true });
  if (process.env.RECORD_HISTORIES === '1') writeFileSync(path.resolve(__dirname, '..', 'histories', `${name}.json`), text);
  return text;
}
