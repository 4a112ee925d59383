import type { Pool } from 'pg';
import { BATCH_COLUMNS, batchRecordOf } from '../../domain/batches/batch-record';
import type { BatchRepository, PendingLine } from '../../domain/ports/batches';

export function createBatchRepository(db: Pool): BatchRepository {
  return {
    async get(batchId) {
      const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE id = $1`, [batchId]);
      return r.rows[0] ? batchRecordOf(r.rows[0]) : null;
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

    async failUnended(batchId, at, errors) {
      await db.query(
        `UPDATE inference_batches SET status = 'failed', failed_at = $2, ended_at = $2, errors = $3
         WHERE id = $1 AND status IN ('validating', 'in_progress', 'finalizing', 'cancelling')`,
        [batchId, at, JSON.stringify(errors)],
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

    async endNotRun(batchId, idxs, state) {
      const column = state === 'canceled' ? 'canceled' : 'expired';
      await db.query(
        `WITH u AS (UPDATE batch_lines SET state = $3 WHERE batch_id = $1 AND idx = ANY($2) AND state = 'pending' RETURNING 1)
         UPDATE inference_batches SET ${column} = ${column} + (SELECT count(*) FROM u) WHERE id = $1`,
        [batchId, idxs, state],
      );
    },

    async providerBatchEnded(batchId, channel, at) {
      await db.query('UPDATE provider_batches SET ended_at = $3 WHERE batch_id = $1 AND channel = $2', [batchId, channel, at]);
    },
  };
}
