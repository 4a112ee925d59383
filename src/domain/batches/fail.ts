import type { BatchRepository } from '../ports/batches';
import { nowSeconds } from './ids';

/**
 * A batch whose workflow gave up (a fault its retries could not fix): it ends `failed`, with the reason in
 * `errors.data[]`, instead of staying in its last state forever. A batch that already ended keeps its end.
 */
export async function failBatch(batches: BatchRepository, batchId: string, reason: string): Promise<void> {
  const data = [{ code: 'batch_failed', message: `The batch could not be processed: ${reason.slice(0, 500)}`, param: null, line: null }];
  await batches.fail(batchId, nowSeconds(), { object: 'list', data }, ['validating', 'in_progress', 'finalizing', 'cancelling']);
}
