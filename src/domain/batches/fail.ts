import type { Pool } from 'pg';
import { nowSeconds } from './ids';

/**
 * A batch whose workflow gave up (a fault its retries could not fix): it ends `failed`, with the reason in
 * `errors.data[]`, instead of staying in its last state forever. A batch that already ended keeps its end.
 */
export async function failBatch(db: Pool, batchId: string, reason: string): Promise<void> {
  const now = nowSeconds();
  const data = [{ code: 'batch_failed', message: `The batch could not be processed: ${reason.slice(0, 500)}`, param: null, line: null }];
  await db.query(
    `UPDATE inference_batches SET status = 'failed', failed_at = $2, ended_at = $2, errors = $3
     WHERE id = $1 AND status IN ('validating', 'in_progress', 'finalizing', 'cancelling')`,
    [batchId, now, JSON.stringify({ object: 'list', data })],
  );
}
