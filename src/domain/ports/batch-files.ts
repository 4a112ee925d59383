/** A file's row (the Files API's record and owner). */
export interface BatchFileRow {
  id: string;
  account_id: number;
  purpose: string;
  filename: string;
  bytes: number;
  lines: number | null;
  object_key: string;
  created_at: number;
  expires_at: number | null;
}

/** The Files API's files (src/db/repositories/batch-files.ts); their bytes are in the ObjectStore. */
export interface BatchFileRepository {
  /** The account's live file (deleted and other accounts' read as absent). */
  owned(accountId: number, id: string): Promise<BatchFileRow | null>;
  /** The object key of a live file, whoever owns it. */
  objectKey(id: string): Promise<string | null>;
  insert(f: { id: string; accountId: number; purpose: string; filename: string; bytes: number; lines: number; objectKey: string; createdAt: number }): Promise<BatchFileRow>;
  /** A batch's output or error file, written again under the same id by a rerun. */
  upsertOutput(f: { id: string; accountId: number; filename: string; bytes: number; objectKey: string; createdAt: number; expiresAt: number }): Promise<void>;
  /** A page of the account's live files after `after`, `limit + 1` rows so the caller knows whether more follow. */
  list(accountId: number, q: { purpose?: string; limit: number; after?: string; order: 'asc' | 'desc' }): Promise<BatchFileRow[]>;
  /** Marks up to `limit` files past their expiry deleted; answers their ids and object keys. */
  expire(now: number, limit: number): Promise<Array<{ id: string; object_key: string }>>;
  markDeleted(id: string, at: number): Promise<void>;
}
