import type { Pool } from 'pg';
import type { AuditEventRecord, AuditRepository } from '../../domain/ports/audit';
import { on } from './queryable';

export function createAuditRepository(db: Pool): AuditRepository {
  return {
    async record(entry, tx) {
      await on(db, tx).query(
        `INSERT INTO audit_events (account_id, action, target_type, target_id, request_id, details, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          entry.accountId,
          entry.action,
          entry.targetType,
          entry.targetId == null ? null : String(entry.targetId),
          entry.requestId ?? null,
          JSON.stringify(entry.details ?? {}),
          Math.floor(Date.now() / 1000),
        ],
      );
    },
    async has(accountId, action, detail) {
      const res = await db.query(`SELECT 1 FROM audit_events WHERE account_id = $1 AND action = $2 AND details->>$3 = $4 LIMIT 1`, [accountId, action, detail.key, detail.value]);
      return (res.rowCount ?? 0) > 0;
    },
    async list(accountId, page) {
      const [rows, count] = await Promise.all([
        db.query<AuditEventRecord>(
          `SELECT id, action, target_type, target_id, request_id, details, created_at
             FROM audit_events WHERE account_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`,
          [accountId, page.limit, page.offset],
        ),
        db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE account_id = $1', [accountId]),
      ]);
      return { items: rows.rows, total: count.rows[0].n };
    },
  };
}
