import type { Pool } from 'pg';
import { inTransaction } from '../../db/pool';
import type { ObjectStore } from '../ports/object-store';
import { BATCH_COLUMNS, batchRecordOf } from './batch-record';
import { objectKeyOf } from './files';
import { lineRequestId, nowSeconds } from './ids';
import { readInputLines } from './input-lines';
import type { JsonShapeLimits } from '../json-shape';

/**
 * An OpenAI batch's validation: its input file becomes its lines, all of them or none. Any problem fails the batch
 * with `errors.data[]` naming the lines, before anything is sent or billed. Run again after a crash, it finds the
 * batch past `validating` and does nothing.
 */
export async function prepareBatch(deps: { db: Pool; store: ObjectStore; maxLines: number; jsonLimits?: JsonShapeLimits }, batchId: string): Promise<'ready' | 'failed' | 'ended'> {
  const r = await deps.db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE id = $1`, [batchId]);
  if (!r.rows[0]) return 'ended';
  const b = batchRecordOf(r.rows[0]);
  if (b.status !== 'validating') return b.status === 'failed' ? 'failed' : 'ready';
  const fail = async (data: unknown[]) => {
    const now = nowSeconds();
    await deps.db.query(`UPDATE inference_batches SET status = 'failed', failed_at = $2, ended_at = $2, errors = $3 WHERE id = $1 AND status IN ('validating', 'cancelling')`, [
      batchId,
      now,
      JSON.stringify({ object: 'list', data }),
    ]);
    return 'failed' as const;
  };
  const file = await deps.db.query<{ object_key: string }>('SELECT object_key FROM batch_files WHERE id = $1 AND deleted_at IS NULL', [b.inputFileId]);
  const missing = () => fail([{ code: 'file_not_found', message: `The input file ${b.inputFileId} no longer exists.`, param: 'input_file_id', line: null }]);
  if (!file.rows[0]) return missing();

  const outcome = await inTransaction(deps.db, async (tx) => {
    // A rerun after a crash mid-way starts from an empty set of lines.
    await tx.query('DELETE FROM batch_lines WHERE batch_id = $1', [batchId]);
    // Opened only now, and read at once: a body held across the awaits above would have no reader for its errors.
    const body = await deps.store.get(objectKeyOf(b.inputFileId!));
    if (!body) return 'missing' as const;
    const { problems, count } = await readInputLines(body, b.endpoint, deps.maxLines, async (lines) => {
      await tx.query(
        `INSERT INTO batch_lines (batch_id, idx, custom_id, body, request_id)
         SELECT $1, t.idx, t.custom_id, t.body, t.request_id FROM unnest($2::int[], $3::text[], $4::jsonb[], $5::text[]) AS t(idx, custom_id, body, request_id)`,
        [batchId, lines.map((l) => l.idx), lines.map((l) => l.customId), lines.map((l) => JSON.stringify(l.body)), lines.map((l) => lineRequestId(batchId, l.customId))],
      );
    }, 1000, deps.jsonLimits);
    if (problems.length > 0) {
      await tx.query('DELETE FROM batch_lines WHERE batch_id = $1', [batchId]);
      const now = nowSeconds();
      await tx.query(`UPDATE inference_batches SET status = 'failed', failed_at = $2, ended_at = $2, errors = $3 WHERE id = $1`, [
        batchId,
        now,
        JSON.stringify({ object: 'list', data: problems }),
      ]);
      return 'failed' as const;
    }
    // A cancel that came while validating stays: the runner then sends nothing.
    await tx.query(`UPDATE inference_batches SET status = CASE WHEN status = 'validating' THEN 'in_progress' ELSE status END, in_progress_at = $2, total = $3 WHERE id = $1`, [
      batchId,
      nowSeconds(),
      count,
    ]);
    return 'ready' as const;
  });
  return outcome === 'missing' ? missing() : outcome;
}
