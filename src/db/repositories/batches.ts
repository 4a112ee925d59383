import type { Pool } from 'pg';
import { BATCH_COLUMNS, batchRecordOf } from '../../domain/batches/batch-record';
import type { BatchRepository, LineRecord, PendingLine } from '../../domain/ports/batches';
import { on } from './queryable';

export function createBatchRepository(db: Pool): BatchRepository {
  return {
    async get(batchId) {
      const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE id = $1`, [batchId]);
      return r.rows[0] ? batchRecordOf(r.rows[0]) : null;
    },

    async owned(accountId, id, api) {
      const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE id = $1 AND account_id = $2 AND ($3::text IS NULL OR api = $3) AND deleted_at IS NULL`, [
        id,
        accountId,
        api ?? null,
      ]);
      return r.rows[0] ? batchRecordOf(r.rows[0]) : null;
    },

    async insert(b, tx) {
      const r = await on(db, tx).query(
        `INSERT INTO inference_batches (id, api, account_id, token_id, token_name, endpoint, input_file_id, status, metadata, callback_url,
           public_origin, request_id, total, created_at, in_progress_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING ${BATCH_COLUMNS}`,
        [
          b.id, b.api, b.accountId, b.tokenId, b.tokenName, b.endpoint, b.inputFileId, b.status, b.metadata === undefined ? null : JSON.stringify(b.metadata),
          b.callbackUrl, b.publicOrigin, b.requestId, b.total, b.createdAt, b.inProgressAt, b.expiresAt,
        ],
      );
      return batchRecordOf(r.rows[0]);
    },

    async page(accountId, api, q) {
      const values: unknown[] = [accountId, q.limit + 1, api];
      let where = 'account_id = $1 AND api = $3 AND deleted_at IS NULL';
      let order = 'DESC';
      if (q.after) {
        values.push(q.after);
        where += ` AND (created_at, id) < (SELECT created_at, id FROM inference_batches WHERE id = $4 AND account_id = $1)`;
      } else if (q.before) {
        values.push(q.before);
        where += ` AND (created_at, id) > (SELECT created_at, id FROM inference_batches WHERE id = $4 AND account_id = $1)`;
        order = 'ASC';
      }
      const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE ${where} ORDER BY created_at ${order}, id ${order} LIMIT $2`, values);
      return r.rows.map(batchRecordOf);
    },

    async listForAccount(accountId, q) {
      const values: unknown[] = [accountId];
      let where = 'account_id = $1 AND deleted_at IS NULL';
      if (q.status) {
        values.push(q.status);
        where += ` AND status = $${values.length}`;
      }
      const total = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM inference_batches WHERE ${where}`, values);
      const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE ${where} ORDER BY created_at DESC, id DESC OFFSET $${values.length + 1} LIMIT $${values.length + 2}`, [
        ...values,
        q.offset,
        q.limit,
      ]);
      return { items: r.rows.map(batchRecordOf), total: total.rows[0].n };
    },

    async markCancelling(batchId, at) {
      await db.query(`UPDATE inference_batches SET status = 'cancelling', cancelling_at = $2 WHERE id = $1 AND status IN ('validating', 'in_progress')`, [batchId, at]);
    },

    async delete(batchId) {
      await db.query('DELETE FROM inference_batches WHERE id = $1', [batchId]);
    },

    async lines(batchId, afterIdx, limit) {
      const r = await db.query<{ idx: number; custom_id: string; state: string; result: unknown }>(
        'SELECT idx, custom_id, state, result FROM batch_lines WHERE batch_id = $1 AND idx > $2 ORDER BY idx LIMIT $3',
        [batchId, afterIdx, limit],
      );
      return r.rows;
    },

    async pendingLines(batchId, afterIdx, limit) {
      const r = await db.query<PendingLine>(
        `SELECT idx, custom_id, body, request_id FROM batch_lines
         WHERE batch_id = $1 AND state = 'pending' AND channel IS NULL AND idx > $2 ORDER BY idx LIMIT $3`,
        [batchId, afterIdx, limit],
      );
      return r.rows;
    },

    async hasPending(batchId) {
      const r = await db.query(`SELECT EXISTS (SELECT 1 FROM batch_lines WHERE batch_id = $1 AND state = 'pending' AND channel IS NULL) AS more`, [batchId]);
      return r.rows[0].more === true;
    },

    async recordLines(batchId, results) {
      if (results.length === 0) return;
      await db.query(
        `WITH u AS (
           UPDATE batch_lines b SET state = t.state, status_code = t.status, result = t.result
           FROM unnest($2::int[], $3::text[], $4::int[], $5::jsonb[]) AS t(idx, state, status, result)
           WHERE b.batch_id = $1 AND b.idx = t.idx AND b.state = 'pending'
           RETURNING b.state, b.request_id
         ), l AS (
           SELECT COALESCE(sum(prompt_tokens), 0) AS input, COALESCE(sum(cache_read_tokens), 0) AS cached,
                  COALESCE(sum(completion_tokens), 0) AS output, COALESCE(sum(reasoning_tokens), 0) AS reasoning
           FROM ledger WHERE request_id IN (SELECT request_id FROM u WHERE state = 'succeeded')
         )
         UPDATE inference_batches SET succeeded = succeeded + (SELECT count(*) FROM u WHERE state = 'succeeded'),
           failed = failed + (SELECT count(*) FROM u WHERE state = 'failed'),
           usage_input = usage_input + l.input, usage_cached = usage_cached + l.cached,
           usage_output = usage_output + l.output, usage_reasoning = usage_reasoning + l.reasoning
         FROM l WHERE id = $1`,
        [batchId, results.map((r) => r.idx), results.map((r) => r.state), results.map((r) => r.status), results.map((r) => JSON.stringify(r.result))],
      );
    },

    async failPending(batchId, status, error) {
      await db.query(
        `WITH u AS (
           UPDATE batch_lines SET state = 'failed', status_code = $2, result = $3 WHERE batch_id = $1 AND state = 'pending' AND provider_batch_id IS NULL RETURNING 1
         )
         UPDATE inference_batches SET failed = failed + (SELECT count(*) FROM u), quota_exhausted = quota_exhausted OR $2 = 429 WHERE id = $1`,
        [batchId, status, JSON.stringify(error)],
      );
    },

    async fail(batchId, at, errors, whileIn, tx) {
      await on(db, tx).query(
        `UPDATE inference_batches SET status = 'failed', failed_at = $2, ended_at = $2, errors = $3
         WHERE id = $1 AND ($4::text[] IS NULL OR status = ANY($4::text[]))`,
        [batchId, at, JSON.stringify(errors), whileIn],
      );
    },

    async clearLines(batchId, tx) {
      await on(db, tx).query('DELETE FROM batch_lines WHERE batch_id = $1', [batchId]);
    },

    async insertLines(batchId, lines, tx) {
      await on(db, tx).query(
        `INSERT INTO batch_lines (batch_id, idx, custom_id, body, request_id)
         SELECT $1, t.idx, t.custom_id, t.body, t.request_id FROM unnest($2::int[], $3::text[], $4::jsonb[], $5::text[]) AS t(idx, custom_id, body, request_id)`,
        [batchId, lines.map((l) => l.idx), lines.map((l) => l.customId), lines.map((l) => JSON.stringify(l.body)), lines.map((l) => l.requestId)],
      );
    },

    async startRun(batchId, at, total, tx) {
      await on(db, tx).query(
        `UPDATE inference_batches SET status = CASE WHEN status = 'validating' THEN 'in_progress' ELSE status END, in_progress_at = $2, total = $3 WHERE id = $1`,
        [batchId, at, total],
      );
    },

    async markFinalizing(batchId, at) {
      await db.query(`UPDATE inference_batches SET status = 'finalizing', finalizing_at = $2 WHERE id = $1 AND status = 'in_progress'`, [batchId, at]);
    },

    async endUnsent(batchId, state, idxs) {
      const column = state === 'canceled' ? 'canceled' : 'expired';
      await db.query(
        `WITH u AS (UPDATE batch_lines SET state = $2 WHERE batch_id = $1 AND state = 'pending' AND ($3::int[] IS NULL OR idx = ANY($3)) RETURNING 1)
         UPDATE inference_batches SET ${column} = ${column} + (SELECT count(*) FROM u) WHERE id = $1`,
        [batchId, state, idxs ?? null],
      );
    },

    async hasLinesIn(batchId, states) {
      const r = await db.query('SELECT 1 FROM batch_lines WHERE batch_id = $1 AND state = ANY($2) LIMIT 1', [batchId, states]);
      return r.rows.length > 0;
    },

    async linesIn(batchId, states, afterIdx, limit) {
      const r = await db.query<LineRecord>(
        'SELECT idx, custom_id, state, status_code, result, request_id FROM batch_lines WHERE batch_id = $1 AND idx > $2 AND state = ANY($3) ORDER BY idx LIMIT $4',
        [batchId, afterIdx, states, limit],
      );
      return r.rows;
    },

    async end(batchId, e) {
      const stamp = e.status === 'cancelled' ? 'cancelled_at' : e.status === 'expired' ? 'expired_at' : 'completed_at';
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
        [batchId, e.status, e.at, e.outputFileId, e.errorFileId],
      );
    },

    async pendingModels(batchId) {
      const r = await db.query<{ model: string }>(
        `SELECT DISTINCT body->>'model' AS model FROM batch_lines WHERE batch_id = $1 AND state = 'pending' AND channel IS NULL AND body->>'model' IS NOT NULL`,
        [batchId],
      );
      return r.rows.map((x) => x.model);
    },

    async assignChannel(batchId, model, channel) {
      await db.query(`UPDATE batch_lines SET channel = $3 WHERE batch_id = $1 AND state = 'pending' AND channel IS NULL AND body->>'model' = $2`, [batchId, model, channel]);
    },

    async channelsWithPending(batchId) {
      const r = await db.query<{ channel: string }>(
        `SELECT DISTINCT channel FROM batch_lines WHERE batch_id = $1 AND channel IS NOT NULL AND state = 'pending' ORDER BY channel`,
        [batchId],
      );
      return r.rows.map((x) => x.channel);
    },

    async providerBatch(batchId, channel) {
      const r = await db.query<{ provider_batch_id: string | null; created_at: string }>(
        'SELECT provider_batch_id, created_at FROM provider_batches WHERE batch_id = $1 AND channel = $2',
        [batchId, channel],
      );
      const row = r.rows[0];
      return row ? { providerBatchId: row.provider_batch_id, createdAt: Number(row.created_at) } : null;
    },

    async channelLines(batchId, channel, providerBatchId) {
      const r =
        providerBatchId === undefined
          ? await db.query<PendingLine>(`SELECT idx, custom_id, body, request_id FROM batch_lines WHERE batch_id = $1 AND channel = $2 AND state = 'pending' ORDER BY idx`, [batchId, channel])
          : await db.query<PendingLine>(
              `SELECT idx, custom_id, body, request_id FROM batch_lines WHERE batch_id = $1 AND channel = $2 AND provider_batch_id = $3 AND state = 'pending' ORDER BY idx`,
              [batchId, channel, providerBatchId],
            );
      return r.rows;
    },

    async markQuotaExhausted(batchId) {
      await db.query('UPDATE inference_batches SET quota_exhausted = true WHERE id = $1', [batchId]);
    },

    async recordProviderIntent(batchId, channel, lines, at) {
      await db.query(`INSERT INTO provider_batches (batch_id, channel, lines, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (batch_id, channel) DO NOTHING`, [
        batchId,
        channel,
        lines,
        at,
      ]);
      const r = await db.query<{ created_at: string }>('SELECT created_at FROM provider_batches WHERE batch_id = $1 AND channel = $2', [batchId, channel]);
      return Number(r.rows[0].created_at);
    },

    async setProviderBatchId(batchId, channel, providerBatchId) {
      await db.query('UPDATE provider_batches SET provider_batch_id = $3 WHERE batch_id = $1 AND channel = $2', [batchId, channel, providerBatchId]);
      await db.query(`UPDATE batch_lines SET provider_batch_id = $3 WHERE batch_id = $1 AND channel = $2 AND state = 'pending'`, [batchId, channel, providerBatchId]);
    },

    async providerBatchEnded(batchId, channel, at) {
      await db.query('UPDATE provider_batches SET ended_at = $3 WHERE batch_id = $1 AND channel = $2', [batchId, channel, at]);
    },
  };
}
