import type { Repositories } from '../ports/repositories';
import type { Account } from '../ports/accounts';
import type { Tx } from '../ports/transactions';
import { ConflictError, InvalidCredentialsError, InvalidSystemTokenError, NotFoundError, ValidationError } from '../errors';
import { generateKeyMaterial, sha256 } from '../keys/key-material';
import { hashPassword, verifyPassword } from './passwords';
import { assertStrongPassword } from './password-policy';
import { addressSubjects, assertNotLocked, recordFailure, ThrottleSubject } from './sign-in-throttle';

export type { Account };

/** What account operations read and write: the accounts, the sign-in throttle and the audit log, in transactions. */
export type AccountDeps = Pick<Repositories, 'accounts' | 'signInFailures' | 'audit' | 'transactions'>;

/** Where a sign-in came from, for the throttle (the client's address) and the audit log. */
export interface SignInContext {
  /** The client's address (request.ip, which honours TRUST_PROXY); absent for the local CLI. */
  address?: string;
  requestId?: string;
  /** `api` (POST /api/user/token and the password change), `console`, `cli`. */
  via: 'api' | 'console' | 'cli';
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
  repos: AccountDeps,
  input: { username: string; password: string; systemToken?: string; admin?: boolean },
): Promise<{ account: Account; systemToken: string }> {
  if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(input.username)) {
    throw new ValidationError('username must be 1-64 letters, digits or _.@-', 'username');
  }
  assertStrongPassword(input.password, input.username);
  const systemToken = input.systemToken ?? newSystemToken();
  const passwordHash = await hashPassword(input.password);
  return repos.transactions.run(async (tx) => {
    const account = await repos.accounts.insert({ username: input.username, passwordHash, systemTokenHash: sha256(systemToken), admin: input.admin === true }, tx);
    if (!account) throw new ConflictError(`username ${input.username} is taken`, 'username');
    await repos.audit.record({ accountId: account.id, action: 'account.create', targetType: 'account', targetId: account.id }, tx);
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
export async function signInWithPassword(repos: AccountDeps, username: string, password: string, ctx: SignInContext): Promise<Account> {
  const subjects = subjectsOf(username, ctx);
  await assertNotLocked(repos.signInFailures, subjects);
  const row = await repos.accounts.withPasswordHash(username);
  // An unknown user costs the same scrypt as a wrong password, so timing does not tell which usernames exist.
  const valid = await verifyPassword(password, row?.passwordHash ?? (await unknownUserHash()));
  if (!row || !valid) {
    const lockedFor = await recordFailure(repos.signInFailures, subjects);
    await repos.audit.record({
      accountId: row?.id ?? null,
      action: 'account.sign_in.failed',
      targetType: 'account',
      targetId: row?.id ?? null,
      requestId: ctx.requestId,
      details: { via: ctx.via, reason: row ? 'wrong_password' : 'unknown_user', address: ctx.address ?? null, ...(lockedFor > 0 ? { locked_seconds: lockedFor } : {}) },
    });
    throw new InvalidCredentialsError();
  }
  await repos.signInFailures.clear(subjects[0]);
  return { id: row.id, username: row.username, isAdmin: row.isAdmin };
}

/**
 * Sets the account's system token (the old one stops working at once) and ends its console sessions: its
 * credentials changed, so sign-ins made with the old ones go.
 */
export async function replaceSystemToken(repos: Pick<AccountDeps, 'accounts'>, tx: Tx, accountId: number, systemToken: string): Promise<boolean> {
  if (!(await repos.accounts.replaceSystemTokenHash(accountId, sha256(systemToken), tx))) return false;
  await repos.accounts.endSessions(accountId, tx);
  return true;
}

/** Checks the password and replaces the account's system token; the old one and every console session end at once. */
export async function rotateSystemToken(
  repos: AccountDeps,
  input: { username: string; password: string },
  ctx: SignInContext,
): Promise<{ account: Account; systemToken: string }> {
  const account = await signInWithPassword(repos, input.username, input.password, ctx);
  const systemToken = newSystemToken();
  await repos.transactions.run(async (tx) => {
    await replaceSystemToken(repos, tx, account.id, systemToken);
    await repos.audit.record({ accountId: account.id, action: 'account.system_token.rotate', targetType: 'account', targetId: account.id, requestId: ctx.requestId }, tx);
  });
  return { account, systemToken };
}

/**
 * Changes the password of an account that proves it knows the current one (throttled like any sign-in). The new
 * one must pass the password policy; every console session of the account ends. The system token stays.
 */
export async function changePassword(
  repos: AccountDeps,
  input: { username: string; currentPassword: string; newPassword: string },
  ctx: SignInContext,
): Promise<Account> {
  const account = await signInWithPassword(repos, input.username, input.currentPassword, ctx);
  assertStrongPassword(input.newPassword, account.username);
  if (input.newPassword === input.currentPassword) throw new ValidationError('new_password: must differ from the current password', 'new_password');
  const passwordHash = await hashPassword(input.newPassword);
  await repos.transactions.run(async (tx) => {
    await repos.accounts.setPasswordHash(account.id, passwordHash, tx);
    await repos.accounts.endSessions(account.id, tx);
    await repos.audit.record({ accountId: account.id, action: 'account.password.change', targetType: 'account', targetId: account.id, requestId: ctx.requestId, details: { via: ctx.via } }, tx);
  });
  return account;
}

/**
 * The account of a system token. A wrong token counts as a failed attempt of the client's address; once that
 * address is locked it gets TooManyAttemptsError instead of a 401 (and nothing more is written for it). A right
 * token always works: 256 random bits are not guessed, and the lock must not shut out the owner.
 */
export async function authenticateSystemToken(repos: AccountDeps, token: string, ctx?: SignInContext): Promise<Account> {
  const row = token ? await repos.accounts.bySystemTokenHash(sha256(token)) : null;
  if (row) return row;
  const subjects = ctx ? addressSubjects(ctx) : [];
  if (ctx && subjects.length > 0) {
    await assertNotLocked(repos.signInFailures, subjects);
    if (token) {
      const lockedFor = await recordFailure(repos.signInFailures, subjects);
      await repos.audit.record({
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


/** Gives or takes the operator's role. */
export async function setAdmin(repos: AccountDeps, username: string, admin: boolean): Promise<Account> {
  return repos.transactions.run(async (tx) => {
    const row = await repos.accounts.setAdmin(username, admin, tx);
    if (!row) throw new NotFoundError(`no account named ${username}`);
    await repos.audit.record({ accountId: row.id, action: admin ? 'account.admin.grant' : 'account.admin.revoke', targetType: 'account', targetId: row.id }, tx);
    return row;
  });
}

