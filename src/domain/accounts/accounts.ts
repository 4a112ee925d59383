import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../../db/pool';
import { recordAudit } from '../audit';
import { ConflictError, InvalidCredentialsError, InvalidSystemTokenError, NotFoundError, ValidationError } from '../errors';
import { generateKeyMaterial, sha256 } from '../keys/key-material';
import { hashPassword, verifyPassword } from './passwords';
import { assertStrongPassword } from './password-policy';
import { addressSubjects, assertNotLocked, clearFailures, recordFailure, ThrottleSubject } from './sign-in-throttle';

export interface Account {
  id: number;
  username: string;
  /** The operator's role: channel health and global metrics. */
  isAdmin: boolean;
}

/** Where a sign-in came from, for the throttle (the client's address) and the audit log. */
export interface SignInContext {
  /** The client's address (request.ip, which honours TRUST_PROXY); absent for the local CLI. */
  address?: string;
  requestId?: string;
  /** `api` (POST /api/user/token and the password change), `console`, `cli`. */
  via: 'api' | 'console' | 'cli';
}

const SYSTEM_TOKEN_LENGTH = 32;
const ACCOUNT_COLUMNS = 'id, username, is_admin AS "isAdmin"';

let unknownUserHashPromise: Promise<string> | null = null;
function unknownUserHash(): Promise<string> {
  unknownUserHashPromise ??= hashPassword(newSystemToken());
  return unknownUserHashPromise;
}

export function newSystemToken(): string {
  return generateKeyMaterial(SYSTEM_TOKEN_LENGTH);
}

export async function createAccount(
  db: Pool,
  input: { username: string; password: string; systemToken?: string; admin?: boolean },
): Promise<{ account: Account; systemToken: string }> {
  if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(input.username)) {
    throw new ValidationError('username must be 1-64 letters, digits or _.@-', 'username');
  }
  assertStrongPassword(input.password, input.username);
  const systemToken = input.systemToken ?? newSystemToken();
  const passwordHash = await hashPassword(input.password);
  return inTransaction(db, async (tx) => {
    const res = await tx.query<Account>(
      `INSERT INTO accounts (username, password_hash, system_token_hash, is_admin) VALUES ($1, $2, $3, $4)
       ON CONFLICT (username) DO NOTHING RETURNING ${ACCOUNT_COLUMNS}`,
      [input.username, passwordHash, sha256(systemToken), input.admin === true],
    );
    if (res.rowCount === 0) throw new ConflictError(`username ${input.username} is taken`, 'username');
    const account = res.rows[0];
    await recordAudit(tx, { accountId: account.id, action: 'account.create', targetType: 'account', targetId: account.id });
    return { account, systemToken };
  });
}

const subjectsOf = (username: string, ctx: SignInContext): ThrottleSubject[] => [
  { scope: 'username', subject: username },
  ...addressSubjects(ctx),
];

/**
 * The account whose password this is. Throttled by the username tried and by the client's address (shared by every
 * replica through PostgreSQL): a locked subject gets TooManyAttemptsError before any password is checked. A wrong
 * password or an unknown user is InvalidCredentialsError alike, costs the same scrypt, and is audited.
 */
export async function signInWithPassword(db: Pool, username: string, password: string, ctx: SignInContext): Promise<Account> {
  const subjects = subjectsOf(username, ctx);
  await assertNotLocked(db, subjects);
  const res = await db.query<Account & { password_hash: string }>(`SELECT ${ACCOUNT_COLUMNS}, password_hash FROM accounts WHERE username = $1`, [username]);
  const row = res.rows[0];
  // An unknown user costs the same scrypt as a wrong password, so timing does not tell which usernames exist.
  const valid = await verifyPassword(password, row?.password_hash ?? (await unknownUserHash()));
  if (!row || !valid) {
    const lockedFor = await recordFailure(db, subjects);
    await recordAudit(db, {
      accountId: row?.id ?? null,
      action: 'account.sign_in.failed',
      targetType: 'account',
      targetId: row?.id ?? null,
      requestId: ctx.requestId,
      details: { via: ctx.via, reason: row ? 'wrong_password' : 'unknown_user', address: ctx.address ?? null, ...(lockedFor > 0 ? { locked_seconds: lockedFor } : {}) },
    });
    throw new InvalidCredentialsError();
  }
  await clearFailures(db, subjects[0]);
  return { id: row.id, username: row.username, isAdmin: row.isAdmin };
}

/** Ends every console session of the account: its credentials changed, so sign-ins made with the old ones go. */
async function endConsoleSessions(tx: PoolClient, accountId: number): Promise<void> {
  await tx.query('DELETE FROM console_sessions WHERE account_id = $1', [accountId]);
}

/** Sets the account's system token (the old one stops working at once) and ends its console sessions. */
export async function replaceSystemToken(tx: PoolClient, accountId: number, systemToken: string): Promise<boolean> {
  const res = await tx.query('UPDATE accounts SET system_token_hash = $2 WHERE id = $1 AND system_token_hash IS DISTINCT FROM $2', [accountId, sha256(systemToken)]);
  if (res.rowCount === 0) return false;
  await endConsoleSessions(tx, accountId);
  return true;
}

/** Checks the password and replaces the account's system token; the old one and every console session end at once. */
export async function rotateSystemToken(
  db: Pool,
  input: { username: string; password: string },
  ctx: SignInContext,
): Promise<{ account: Account; systemToken: string }> {
  const account = await signInWithPassword(db, input.username, input.password, ctx);
  const systemToken = newSystemToken();
  await inTransaction(db, async (tx) => {
    await replaceSystemToken(tx, account.id, systemToken);
    await recordAudit(tx, { accountId: account.id, action: 'account.system_token.rotate', targetType: 'account', targetId: account.id, requestId: ctx.requestId });
  });
  return { account, systemToken };
}

/**
 * Changes the password of an account that proves it knows the current one (throttled like any sign-in). The new
 * one must pass the password policy; every console session of the account ends. The system token stays.
 */
export async function changePassword(
  db: Pool,
  input: { username: string; currentPassword: string; newPassword: string },
  ctx: SignInContext,
): Promise<Account> {
  const account = await signInWithPassword(db, input.username, input.currentPassword, ctx);
  assertStrongPassword(input.newPassword, account.username);
  if (input.newPassword === input.currentPassword) throw new ValidationError('new_password: must differ from the current password', 'new_password');
  const passwordHash = await hashPassword(input.newPassword);
  await inTransaction(db, async (tx) => {
    await tx.query('UPDATE accounts SET password_hash = $2 WHERE id = $1', [account.id, passwordHash]);
    await endConsoleSessions(tx, account.id);
    await recordAudit(tx, { accountId: account.id, action: 'account.password.change', targetType: 'account', targetId: account.id, requestId: ctx.requestId, details: { via: ctx.via } });
  });
  return account;
}

/**
 * The account of a system token. A wrong token counts as a failed attempt of the client's address; once that
 * address is locked it gets TooManyAttemptsError instead of a 401 (and nothing more is written for it). A right
 * token always works: 256 random bits are not guessed, and the lock must not shut out the owner.
 */
export async function authenticateSystemToken(db: Pool, token: string, ctx?: SignInContext): Promise<Account> {
  const res = token ? await db.query<Account>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE system_token_hash = $1`, [sha256(token)]) : null;
  const row = res?.rows[0];
  if (row) return row;
  const subjects = ctx ? addressSubjects(ctx) : [];
  if (ctx && subjects.length > 0) {
    await assertNotLocked(db, subjects);
    if (token) {
      const lockedFor = await recordFailure(db, subjects);
      await recordAudit(db, {
        accountId: null,
        action: 'account.sign_in.failed',
        targetType: 'account',
        requestId: ctx.requestId,
        details: { via: ctx.via, reason: 'invalid_system_token', address: ctx.address, ...(lockedFor > 0 ? { locked_seconds: lockedFor } : {}) },
      });
    }
  }
  throw new InvalidSystemTokenError();
}

export async function findAccountByUsername(db: Pool, username: string): Promise<Account | null> {
  const res = await db.query<Account>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE username = $1`, [username]);
  return res.rows[0] ?? null;
}

/** Gives or takes the operator's role. */
export async function setAdmin(db: Pool, username: string, admin: boolean): Promise<Account> {
  return inTransaction(db, async (tx) => {
    const res = await tx.query<Account>(`UPDATE accounts SET is_admin = $2 WHERE username = $1 RETURNING ${ACCOUNT_COLUMNS}`, [username, admin]);
    const row = res.rows[0];
    if (!row) throw new NotFoundError(`no account named ${username}`);
    await recordAudit(tx, { accountId: row.id, action: admin ? 'account.admin.grant' : 'account.admin.revoke', targetType: 'account', targetId: row.id });
    return row;
  });
}

