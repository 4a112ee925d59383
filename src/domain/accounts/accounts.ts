import type { Pool } from 'pg';
import { inTransaction } from '../../db/pool';
import { recordAudit } from '../audit';
import { ConflictError, InvalidCredentialsError, InvalidSystemTokenError, ValidationError } from '../errors';
import { generateKeyMaterial, sha256 } from '../keys/key-material';
import { hashPassword, verifyPassword } from './passwords';

export interface Account {
  id: number;
  username: string;
}

const SYSTEM_TOKEN_LENGTH = 32;

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
  input: { username: string; password: string; systemToken?: string },
): Promise<{ account: Account; systemToken: string }> {
  if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(input.username)) {
    throw new ValidationError('username must be 1-64 letters, digits or _.@-', 'username');
  }
  if (input.password.length < 8) throw new ValidationError('password must be at least 8 characters', 'password');
  const systemToken = input.systemToken ?? newSystemToken();
  const passwordHash = await hashPassword(input.password);
  return inTransaction(db, async (tx) => {
    const res = await tx.query<Account>(
      `INSERT INTO accounts (username, password_hash, system_token_hash) VALUES ($1, $2, $3)
       ON CONFLICT (username) DO NOTHING RETURNING id, username`,
      [input.username, passwordHash, sha256(systemToken)],
    );
    if (res.rowCount === 0) throw new ConflictError(`username ${input.username} is taken`, 'username');
    const account = res.rows[0];
    await recordAudit(tx, { accountId: account.id, action: 'account.create', targetType: 'account', targetId: account.id });
    return { account, systemToken };
  });
}

/** The account whose password this is; InvalidCredentialsError for a wrong password or an unknown user alike. */
export async function verifyAccountPassword(db: Pool, username: string, password: string): Promise<Account> {
  const res = await db.query<{ id: number; username: string; password_hash: string }>(
    'SELECT id, username, password_hash FROM accounts WHERE username = $1',
    [username],
  );
  const row = res.rows[0];
  // An unknown user costs the same scrypt as a wrong password, so timing does not tell which usernames exist.
  const valid = await verifyPassword(password, row?.password_hash ?? (await unknownUserHash()));
  if (!row || !valid) throw new InvalidCredentialsError();
  return { id: row.id, username: row.username };
}

/** Checks the password and replaces the account's system token; the old one stops working at once. */
export async function rotateSystemToken(
  db: Pool,
  input: { username: string; password: string; requestId?: string },
): Promise<{ account: Account; systemToken: string }> {
  const row = await verifyAccountPassword(db, input.username, input.password);
  const systemToken = newSystemToken();
  await inTransaction(db, async (tx) => {
    await tx.query('UPDATE accounts SET system_token_hash = $2 WHERE id = $1', [row.id, sha256(systemToken)]);
    await recordAudit(tx, {
      accountId: row.id,
      action: 'account.system_token.rotate',
      targetType: 'account',
      targetId: row.id,
      requestId: input.requestId,
    });
  });
  return { account: row, systemToken };
}

export async function authenticateSystemToken(db: Pool, token: string): Promise<Account> {
  if (!token) throw new InvalidSystemTokenError();
  const res = await db.query<Account>('SELECT id, username FROM accounts WHERE system_token_hash = $1', [sha256(token)]);
  if (res.rowCount === 0) throw new InvalidSystemTokenError();
  return res.rows[0];
}

export async function findAccountByUsername(db: Pool, username: string): Promise<Account | null> {
  const res = await db.query<Account>('SELECT id, username FROM accounts WHERE username = $1', [username]);
  return res.rows[0] ?? null;
}
