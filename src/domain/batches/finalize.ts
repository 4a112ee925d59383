import type { Pool } from 'pg';
import { Readable } from 'node:stream';
import type { ObjectStore } from '../ports/object-store';
import { BATCH_COLUMNS, batchRecordOf, type BatchRecord, isEnded } from './batch-record';
import { objectKeyOf } from './files';
import { batchFileId, lineEntryId, nowSeconds } from './ids';

/**
 * A batch's end: lines never sent end `canceled` (a cancel) or `expired` (past the completion window), the OpenAI
 * output and error files are written, and the batch gets its final status, its `usage` counted from its ledger rows and its
 * timestamps. Run again (a retried activity), it writes the same files under the same ids and changes nothing else.
 */

export interface FinalizeDeps {
  db: Pool;
  store: ObjectStore;
  /** How long output and error files are kept (BATCH_FILE_RETENTION_DAYS). */
  retentionSeconds: number;
}

interface LineRow {
  idx: number;
  custom_id: string;
  state: string;
  status_code: number | null;
  result: unknown;
  request_id: string;
}

async function* lines(db: Pool, batchId: string, states: string[]): AsyncGenerator<LineRow[]> {
  for (let after = -1; ; ) {
    const r = await db.query<LineRow>(
      'SELECT idx, custom_id, state, status_code, result, request_id FROM batch_lines WHERE batch_id = $1 AND idx > $2 AND state = ANY($3) ORDER BY idx LIMIT 1000',
      [batchId, after, states],
    );
    if (r.rows.length === 0) return;
    yield r.rows;
    after = r.rows[r.rows.length - 1].idx;
  }
}

const NOT_SENT: Record<string, { code: string; message: string }> = {
  canceled: { code: 'batch_cancelled', message: 'The batch was cancelled before this request was sent.' },
  expired: { code: 'batch_expired', message: 'The batch expired before this request was sent.' },
};

/** One line of OpenAI's output or error file. */
function entryOf(batchId: string, l: LineRow): string {
  const notSent = NOT_SENT[l.state];
  const entry = notSent
    ? { id: lineEntryId(batchId, l.idx), custom_id: l.custom_id, response: null, error: notSent }
    : { id: lineEntryId(batchId, l.idx), custom_id: l.custom_id, response: { status_code: l.status_code ?? 500, request_id: l.request_id, body: l.result }, error: null };
  return `${JSON.stringify(entry)}\n`;
}

async function writeFile(deps: FinalizeDeps, b: BatchRecord, kind: 'output' | 'error', states: string[]): Promise<string | null> {
  const first = await deps.db.query('SELECT 1 FROM batch_lines WHERE batch_id = $1 AND state = ANY($2) LIMIT 1', [b.id, states]);
  if (first.rows.length === 0) return null;
  const id = batchFileId(b.id, kind);
  const source = Readable.from(
    (async function* () {
      for await (const page of lines(deps.db, b.id, states)) yield Buffer.from(page.map((l) => entryOf(b.id, l)).join(''));
    })(),
  );
  const bytes = await deps.store.put(objectKeyOf(id), source, { contentType: 'application/jsonl' });
  const now = nowSeconds();
  await deps.db.query(
    `INSERT INTO batch_files (id, account_id, purpose, filename, bytes, object_key, created_at, expires_at)
     VALUES ($1, $2, 'batch_output', $3, $4, $5, $6, $7)
     ON CONFLICT (id) DO UPDATE SET bytes = EXCLUDED.bytes`,
    [id, b.accountId, `batch_${b.id}_${kind}.jsonl`, bytes, objectKeyOf(id), now, now + deps.retentionSeconds],
  );
  return id;
}

export async function finalizeBatch(deps: FinalizeDeps, batchId: string): Promise<{ status: string; api: string } | null> {
  const { db } = deps;
  const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE id = $1`, [batchId]);
  if (!r.rows[0]) return null;
  let b = batchRecordOf(r.rows[0]);
  if (isEnded(b.status)) return { status: b.status, api: b.api };
  const now = nowSeconds();
  const cancelled = b.status === 'cancelling';
  if (!cancelled) await db.query(`UPDATE inference_batches SET status = 'finalizing', finalizing_at = $2 WHERE id = $1 AND status = 'in_progress'`, [batchId, now]);
  const expired = !cancelled && now >= b.expiresAt;
  const notSent = cancelled ? 'canceled' : expired ? 'expired' : null;
  if (notSent) {
    await db.query(
      `WITH u AS (UPDATE batch_lines SET state = $2 WHERE batch_id = $1 AND state = 'pending' RETURNING 1)
       UPDATE inference_batches SET ${notSent} = ${notSent} + (SELECT count(*) FROM u) WHERE id = $1`,
      [batchId, notSent],
    );
  }
  b = batchRecordOf((await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE id = $1`, [batchId])).rows[0]);
  const output = b.api === 'openai' ? await writeFile(deps, b, 'output', ['succeeded']) : null;
  const errors = b.api === 'openai' ? await writeFile(deps, b, 'error', ['failed', 'canceled', 'expired']) : null;
  const status = cancelled ? 'cancelled' : expired ? 'expired' : 'completed';
  const stamp = cancelled ? 'cancelled_at' : expired ? 'expired_at' : 'completed_at';
  const end = nowSeconds();
  await db.query(
    `WITH l AS (
       SELECT COALESCE(sum(l.prompt_tokens), 0) AS input, COALESCE(sum(l.cache_read_tokens), 0) AS cached,
              COALESCE(sum(l.completion_tokens), 0) AS output, COALESCE(sum(l.reasoning_tokens), 0) AS reasoning
       FROM batch_lines b JOIN ledger l ON l.request_id = b.request_id WHERE b.batch_id = $1
     )
     UPDATE inference_batches SET status = $2, ${stamp} = $3, ended_at = $3, output_file_id = $4, error_file_id = $5,
       finalizing_at = COALESCE(finalizing_at, $3),
       usage_input = l.input, usage_cached = l.cached, usage_output = l.output, usage_reasoning = l.reasoning
     FROM l WHERE id = $1 AND status IN ('in_progress', 'finalizing', 'cancelling')`,
    [batchId, status, end, output, errors],
  );
  return { status, api: b.api };
}
