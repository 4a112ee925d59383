import type { Pool, PoolClient } from 'pg';

export interface AuditEntry {
  /** Null for a failed sign-in with a username no account has. */
  accountId: number | null;
  action: string;
  targetType: string;
  targetId?: string | number | null;
  requestId?: string | null;
  /** Never key material: names, ids, counts and changed field names only. */
  details?: Record<string, unknown>;
}

export async function recordAudit(db: Pool | PoolClient, entry: AuditEntry): Promise<void> {
  await db.query(
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
}

export interface AuditEventRecord {
  id: number;
  action: string;
  target_type: string;
  target_id: string | null;
  request_id: string | null;
  details: Record<string, unknown>;
  created_at: number;
}

export async function listAudit(
  db: Pool,
  accountId: number,
  page: { offset: number; limit: number },
): Promise<{ items: AuditEventRecord[]; total: number }> {
  const [rows, count] = await Promise.all([
    db.query<AuditEventRecord>(
      `SELECT id, action, target_type, target_id, request_id, details, created_at
         FROM audit_events WHERE account_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`,
      [accountId, page.limit, page.offset],
    ),
    db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE account_id = $1', [accountId]),
  ]);
  return { items: rows.rows, total: count.rows[0].n };
}
