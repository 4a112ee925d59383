import type { Pool } from 'pg';
import type { Account, AccountRepository, SignInFailureRepository } from '../../domain/ports/accounts';
import { on } from './queryable';

const ACCOUNT_COLUMNS = 'id, username, is_admin AS "isAdmin"';

export function createAccountRepository(db: Pool): AccountRepository {
  return {
    async insert(a, tx) {
      const res = await on(db, tx).query<Account>(
        `INSERT INTO accounts (username, password_hash, system_token_hash, is_admin) VALUES ($1, $2, $3, $4)
         ON CONFLICT (username) DO NOTHING RETURNING ${ACCOUNT_COLUMNS}`,
        [a.username, a.passwordHash, a.systemTokenHash, a.admin],
      );
      return res.rows[0] ?? null;
    },
    async byUsername(username) {
      const res = await db.query<Account>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE username = $1`, [username]);
      return res.rows[0] ?? null;
    },
    async withPasswordHash(username) {
      const res = await db.query<Account & { passwordHash: string }>(`SELECT ${ACCOUNT_COLUMNS}, password_hash AS "passwordHash" FROM accounts WHERE username = $1`, [username]);
      return res.rows[0] ?? null;
    },
    async bySystemTokenHash(hash) {
      const res = await db.query<Account>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE system_token_hash = $1`, [hash]);
      return res.rows[0] ?? null;
    },
    async replaceSystemTokenHash(accountId, hash, tx) {
      const res = await on(db, tx).query('UPDATE accounts SET system_token_hash = $2 WHERE id = $1 AND system_token_hash IS DISTINCT FROM $2', [accountId, hash]);
      return (res.rowCount ?? 0) > 0;
    },
    async setPasswordHash(accountId, hash, tx) {
      await on(db, tx).query('UPDATE accounts SET password_hash = $2 WHERE id = $1', [accountId, hash]);
    },
    async setAdmin(username, admin, tx) {
      const res = await on(db, tx).query<Account>(`UPDATE accounts SET is_admin = $2 WHERE username = $1 RETURNING ${ACCOUNT_COLUMNS}`, [username, admin]);
      return res.rows[0] ?? null;
    },

    async openSession(s) {
      await db.query('DELETE FROM console_sessions WHERE account_id = $1 AND expires_at < now()', [s.accountId]);
      await db.query(`INSERT INTO console_sessions (id_hash, account_id, csrf, expires_at) VALUES ($1, $2, $3, now() + $4::int * interval '1 second')`, [
        s.idHash,
        s.accountId,
        s.csrf,
        s.seconds,
      ]);
    },
    async session(idHash) {
      const res = await db.query<{ id: number; username: string; is_admin: boolean; csrf: string }>(
        `SELECT a.id, a.username, a.is_admin, s.csrf FROM console_sessions s JOIN accounts a ON a.id = s.account_id
          WHERE s.id_hash = $1 AND s.expires_at > now()`,
        [idHash],
      );
      const row = res.rows[0];
      return row ? { account: { id: row.id, username: row.username, isAdmin: row.is_admin }, csrf: row.csrf } : null;
    },
    async closeSession(idHash) {
      await db.query('DELETE FROM console_sessions WHERE id_hash = $1', [idHash]);
    },
    async endSessions(accountId, tx) {
      await on(db, tx).query('DELETE FROM console_sessions WHERE account_id = $1', [accountId]);
    },
  };
}

export function createSignInFailureRepository(db: Pool): SignInFailureRepository {
  return {
    async lockedFor(subjects) {
      const res = await db.query<{ wait: number | null }>(
        `SELECT ceil(extract(epoch FROM max(locked_until) - now()))::int AS wait FROM sign_in_failures
          WHERE (scope, subject) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND locked_until > now()`,
        [subjects.map((s) => s.scope), subjects.map((s) => s.subject)],
      );
      return Math.max(0, res.rows[0]?.wait ?? 0);
    },
    async countFailure({ scope, subject }, windowSeconds) {
      const res = await db.query<{ failures: number }>(
        `INSERT INTO sign_in_failures AS f (scope, subject, failures, last_failure_at) VALUES ($1, $2, 1, now())
         ON CONFLICT (scope, subject) DO UPDATE SET
           failures = CASE WHEN f.last_failure_at < now() - $3::int * interval '1 second' THEN 1 ELSE f.failures + 1 END,
           last_failure_at = now()
         RETURNING failures`,
        [scope, subject, windowSeconds],
      );
      return res.rows[0].failures;
    },
    async lock({ scope, subject }, seconds) {
      await db.query(`UPDATE sign_in_failures SET locked_until = now() + $3::int * interval '1 second' WHERE scope = $1 AND subject = $2`, [scope, subject, seconds]);
    },
    async forgetOld(windowSeconds) {
      await db.query(`DELETE FROM sign_in_failures WHERE last_failure_at < now() - $1::int * interval '1 second' AND (locked_until IS NULL OR locked_until < now())`, [
        windowSeconds,
      ]);
    },
    async clear({ scope, subject }) {
      await db.query('DELETE FROM sign_in_failures WHERE scope = $1 AND subject = $2', [scope, subject]);
    },
  };
}
