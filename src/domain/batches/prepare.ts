import type { Repositories } from '../ports/repositories';
import type { ObjectStore } from '../ports/object-store';
import { objectKeyOf } from './files';
import { lineRequestId, nowSeconds } from './ids';
import { readInputLines } from './input-lines';
import type { JsonShapeLimits } from '../json-shape';

export interface PrepareDeps {
  repos: Pick<Repositories, 'batches' | 'batchFiles' | 'transactions'>;
  store: ObjectStore;
  maxLines: number;
  jsonLimits?: JsonShapeLimits;
}

/**
 * An OpenAI batch's validation: its input file becomes its lines, all of them or none. Any problem fails the batch
 * with `errors.data[]` naming the lines, before anything is sent or billed. Run again after a crash, it finds the
 * batch past `validating` and does nothing.
 */
export async function prepareBatch(deps: PrepareDeps, batchId: string): Promise<'ready' | 'failed' | 'ended'> {
  const { batches, batchFiles, transactions } = deps.repos;
  const b = await batches.get(batchId);
  if (!b) return 'ended';
  if (b.status !== 'validating') return b.status === 'failed' ? 'failed' : 'ready';
  const fail = async (data: unknown[]) => {
    await batches.fail(batchId, nowSeconds(), { object: 'list', data }, ['validating', 'cancelling']);
    return 'failed' as const;
  };
  const missing = () => fail([{ code: 'file_not_found', message: `The input file ${b.inputFileId} no longer exists.`, param: 'input_file_id', line: null }]);
  if (b.inputFileId === null || (await batchFiles.objectKey(b.inputFileId)) === null) return missing();

  const outcome = await transactions.run(async (tx) => {
    // A rerun after a crash mid-way starts from an empty set of lines.
    await batches.clearLines(batchId, tx);
    // Opened only now, and read at once: a body held across the awaits above would have no reader for its errors.
    const body = await deps.store.get(objectKeyOf(b.inputFileId!));
    if (!body) return 'missing' as const;
    const { problems, count } = await readInputLines(body, b.endpoint, deps.maxLines, async (lines) => {
      await batches.insertLines(batchId, lines.map((l) => ({ idx: l.idx, customId: l.customId, body: l.body, requestId: lineRequestId(batchId, l.customId) })), tx);
    }, 1000, deps.jsonLimits);
    if (problems.length > 0) {
      await batches.clearLines(batchId, tx);
      await batches.fail(batchId, nowSeconds(), { object: 'list', data: problems }, null, tx);
      return 'failed' as const;
    }
    // A cancel that came while validating stays: the runner then sends nothing.
    await batches.startRun(batchId, nowSeconds(), count, tx);
    return 'ready' as const;
  });
  return outcome === 'missing' ? missing() : outcome;
}
