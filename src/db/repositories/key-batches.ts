import type { Pool } from 'pg';
import type { KeyBatchEnd, KeyBatchRepository, KeyBatchRow } from '../../domain/ports/keys';
import { clientOf, on } from './queryable';

const BATCH_COLUMNS = `id, account_id, kind, status, phase, requested, created, changed, processed, source_batch_id, params,
  request_hash, error, workflow_started_at IS NOT NULL AS workflow_started,
  (extract(epoch from started_at) * 1000)::bigint AS started_ms,
  (extract(epoch from finished_at) * 1000)::bigint AS finished_ms,
  (extract(epoch from grace_ends_at) * 1000)::bigint AS grace_ends_ms`;

export function createKeyBatchRepository(db: Pool): KeyBatchRepository {
  return {
    async owned(accountId, id, opts, tx) {
      const res = await on(db, tx).query<KeyBatchRow>(`SELECT ${BATCH_COLUMNS} FROM key_batches WHERE id = $1 AND account_id = $2${opts?.lock ? ' FOR UPDATE' : ''}`, [
        id,
        accountId,
      ]);
      return res.rows[0] ?? null;
    },

    async byIdempotencyKey(accountId, key, tx) {
      const res = await on(db, tx).query<KeyBatchRow>(`SELECT ${BATCH_COLUMNS} FROM key_batches WHERE account_id = $1 AND idempotency_key = $2`, [accountId, key]);
      return res.rows[0] ?? null;
    },

    async lockIdempotencyKey(accountId, key, tx) {
      await clientOf(tx).query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`key_batches:${accountId}:${key}`]);
    },

    async insert(b, tx) {
      const res = await on(db, tx).query<KeyBatchRow>(
        `INSERT INTO key_batches (account_id, kind, status, requested, params, source_batch_id, idempotency_key, request_hash, phase)
         VALUES ($1, $2, 'running', $3, $4, $5, $6, $7, $8)
         ON CONFLICT (account_id, idempotency_key) DO NOTHING
         RETURNING ${BATCH_COLUMNS}`,
        [b.accountId, b.kind, b.requested, JSON.stringify(b.params), b.sourceBatchId, b.idempotencyKey, b.requestHash, b.phase],
      );
      return res.rows[0] ?? null;
    },

    async runningOnSource(sourceId, tx) {
      const res = await on(db, tx).query<{ id: number; kind: string }>(
        `SELECT id, kind FROM key_batches WHERE source_batch_id = $1 AND status = 'running' AND kind IN ('status', 'rotate') LIMIT 1`,
        [sourceId],
      );
      return res.rows[0] ?? null;
    },

    async list(accountId, page) {
      const [rows, count] = await Promise.all([
        db.query<KeyBatchRow>(`SELECT ${BATCH_COLUMNS} FROM key_batches WHERE account_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`, [accountId, page.limit, page.offset]),
        db.query<{ n: number }>('SELECT count(*)::int AS n FROM key_batches WHERE account_id = $1', [accountId]),
      ]);
      return { rows: rows.rows, total: count.rows[0].n };
    },

    async markWorkflowStarted(id) {
      await db.query('UPDATE key_batches SET workflow_started_at = now() WHERE id = $1 AND workflow_started_at IS NULL', [id]);
    },

    async endRunning(id, status, error) {
      await db.query(`UPDATE key_batches SET status = $2, error = $3, finished_at = now() WHERE id = $1 AND status = 'running'`, [id, status, error]);
    },

    async step(batchId, tx) {
      const res = await on(db, tx).query('SELECT account_id, kind, status, params FROM key_batches WHERE id = $1', [batchId]);
      return res.rows[0] ?? null;
    },

    async addCreated(batchId, n, opts, tx) {
      const res = await on(db, tx).query<{ created: number }>(
        `UPDATE key_batches SET created = created + $2, phase = 'issuing'${opts.progressed ? ', progressed_at = now()' : ''} WHERE id = $1 RETURNING created`,
        [batchId, n],
      );
      return res.rows[0].created;
    },

    async addStatusChunk(r, tx) {
      const res = await on(db, tx).query<{ processed: number }>(
        `UPDATE key_batches SET changed = changed + $2, phase = $4,
                processed = processed + (SELECT count(*) FROM tokens
                                          WHERE batch_id = $3 AND batch_index > key_batches.processed_through AND batch_index <= $5),
                processed_through = GREATEST(processed_through, $5)
          WHERE id = $1 RETURNING processed`,
        [r.batchId, r.changed, r.sourceBatchId, r.phase, r.to],
      );
      return res.rows[0].processed;
    },

    async startGrace(batchId, endsAtMs) {
      await db.query(`UPDATE key_batches SET phase = 'grace', grace_ends_at = to_timestamp($2 / 1000.0) WHERE id = $1 AND status = 'running'`, [batchId, endsAtMs]);
    },

    async markTidying(batchId) {
      const res = await db.query<{ created: number }>(
        `UPDATE key_batches SET phase = 'tidying' WHERE id = $1 AND status = 'running' AND kind IN ('issue', 'rotate') RETURNING created`,
        [batchId],
      );
      return res.rows[0]?.created ?? null;
    },

    async otherLargeIssueWriting(batchId, minKeys, withinSeconds) {
      const res = await db.query(
        `SELECT 1 FROM key_batches
          WHERE status = 'running' AND kind = 'issue' AND id <> $1 AND requested >= $2 AND phase = 'issuing'
            AND progressed_at > now() - make_interval(secs => $3)
          LIMIT 1`,
        [batchId, minKeys, withinSeconds],
      );
      return (res.rowCount ?? 0) > 0;
    },

    async tidyKeys() {
      await db.query('VACUUM (ANALYZE) tokens');
    },

    async finish(batchId, status, error, tx) {
      const res = await on(db, tx).query<KeyBatchEnd>(
        `UPDATE key_batches SET status = $2, error = $3, finished_at = now(),
                phase = CASE WHEN $2 = 'completed' THEN 'done' ELSE phase END
          WHERE id = $1 AND status = 'running'
          RETURNING account_id, kind, status, created, changed, requested, source_batch_id`,
        [batchId, status, error],
      );
      return res.rows[0] ?? null;
    },

    async counts(batchId, tx) {
      const res = await on(db, tx).query('SELECT status, created, changed FROM key_batches WHERE id = $1', [batchId]);
      return res.rows[0] ?? null;
    },
  };
}
