import type { Pool } from 'pg';
import type { BatchFileRepository, BatchFileRow } from '../../domain/ports/batch-files';

const COLUMNS = 'id, account_id, purpose, filename, bytes, lines, object_key, created_at, expires_at';

export function createBatchFileRepository(db: Pool): BatchFileRepository {
  return {
    async owned(accountId, id) {
      const r = await db.query<BatchFileRow>(`SELECT ${COLUMNS} FROM batch_files WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`, [id, accountId]);
      return r.rows[0] ?? null;
    },
    async objectKey(id) {
      const r = await db.query<{ object_key: string }>('SELECT object_key FROM batch_files WHERE id = $1 AND deleted_at IS NULL', [id]);
      return r.rows[0]?.object_key ?? null;
    },
    async insert(f) {
      const r = await db.query<BatchFileRow>(
        `INSERT INTO batch_files (id, account_id, purpose, filename, bytes, lines, object_key, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
        [f.id, f.accountId, f.purpose, f.filename, f.bytes, f.lines, f.objectKey, f.createdAt],
      );
      return r.rows[0];
    },
    async upsertOutput(f) {
      await db.query(
        `INSERT INTO batch_files (id, account_id, purpose, filename, bytes, object_key, created_at, expires_at)
         VALUES ($1, $2, 'batch_output', $3, $4, $5, $6, $7)
         ON CONFLICT (id) DO UPDATE SET bytes = EXCLUDED.bytes`,
        [f.id, f.accountId, f.filename, f.bytes, f.objectKey, f.createdAt, f.expiresAt],
      );
    },
    async list(accountId, q) {
      const values: unknown[] = [accountId];
      let where = 'account_id = $1 AND deleted_at IS NULL';
      if (q.purpose) {
        values.push(q.purpose);
        where += ` AND purpose = $${values.length}`;
      }
      const cmp = q.order === 'asc' ? '>' : '<';
      if (q.after) {
        values.push(q.after);
        where += ` AND (created_at, id) ${cmp} (SELECT created_at, id FROM batch_files WHERE id = $${values.length} AND account_id = $1)`;
      }
      values.push(q.limit + 1);
      const dir = q.order === 'asc' ? 'ASC' : 'DESC';
      const r = await db.query<BatchFileRow>(`SELECT ${COLUMNS} FROM batch_files WHERE ${where} ORDER BY created_at ${dir}, id ${dir} LIMIT $${values.length}`, values);
      return r.rows;
    },
    async expire(now, limit) {
      const r = await db.query<{ id: string; object_key: string }>(
        `UPDATE batch_files SET deleted_at = $1 WHERE id IN (
           SELECT id FROM batch_files WHERE deleted_at IS NULL AND expires_at IS NOT NULL AND expires_at <= $1 LIMIT $2
         ) RETURNING id, object_key`,
        [now, limit],
      );
      return r.rows;
    },
    async markDeleted(id, at) {
      await db.query('UPDATE batch_files SET deleted_at = $2 WHERE id = $1', [id, at]);
    },
  };
}
