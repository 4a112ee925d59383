import type { Tx } from './transactions';

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

export interface AuditEventRecord {
  id: number;
  action: string;
  target_type: string;
  target_id: string | null;
  request_id: string | null;
  details: Record<string, unknown>;
  created_at: number;
}

/** Who changed what: written in the transaction of the change it records. */
export interface AuditRepository {
  record(entry: AuditEntry, tx?: Tx): Promise<void>;
  /** Whether the account has an event `action` whose details have `detail.key` equal to `detail.value`. */
  has(accountId: number, action: string, detail: { key: string; value: string }): Promise<boolean>;
  /** An account's events, newest first. */
  list(accountId: number, page: { offset: number; limit: number }): Promise<{ items: AuditEventRecord[]; total: number }>;
}
