import type { Pool } from 'pg';
import { ForbiddenError, InvalidSystemTokenError } from '../errors';
import { generateKeyMaterial, sameSecret, sha256 } from '../keys/key-material';
import type { Account } from './accounts';

/** How long a console sign-in lasts. */
export const CONSOLE_SESSION_SECONDS = 12 * 3600;

export interface ConsoleSession {
  account: Account;
  csrf: string;
}

/** Signs an account into the console: a new random session id (the cookie) and its CSRF token. */
export async function openConsoleSession(db: Pool, account: Account): Promise<{ sessionId: string; csrf: string }> {
  const sessionId = generateKeyMaterial(32);
  const csrf = generateKeyMaterial(32);
  // Expired sign-ins of this account go as a new one comes; there is no other sweeper to run.
  await db.query('DELETE FROM console_sessions WHERE account_id = $1 AND expires_at < now()', [account.id]);
  await db.query(
    `INSERT INTO console_sessions (id_hash, account_id, csrf, expires_at) VALUES ($1, $2, $3, now() + $4::int * interval '1 second')`,
    [sha256(sessionId), account.id, csrf, CONSOLE_SESSION_SECONDS],
  );
  return { sessionId, csrf };
}

export async function findConsoleSession(db: Pool, sessionId: string): Promise<ConsoleSession> {
  const res = await db.query<{ id: number; username: string; is_admin: boolean; csrf: string }>(
    `SELECT a.id, a.username, a.is_admin, s.csrf FROM console_sessions s JOIN accounts a ON a.id = s.account_id
      WHERE s.id_hash = $1 AND s.expires_at > now()`,
    [sha256(sessionId)],
  );
  const row = res.rows[0];
  if (!row) throw new InvalidSystemTokenError('the console session has ended; sign in again');
  return { account: { id: row.id, username: row.username, isAdmin: row.is_admin }, csrf: row.csrf };
}

export async function closeConsoleSession(db: Pool, sessionId: string): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE id_hash = $1', [sha256(sessionId)]);
}

/** A write made with the session cookie must carry the session's CSRF token (X-CSRF-Token). */
export function checkCsrf(session: ConsoleSession, sent: string | undefined): void {
  if (!sameSecret(sent ?? '', session.csrf)) {
    throw new ForbiddenError('a write made with the console session needs its X-CSRF-Token header');
  }
}
