import { ForbiddenError, InvalidSystemTokenError } from '../errors';
import { generateKeyMaterial, sameSecret, sha256 } from '../keys/key-material';
import type { Account, AccountRepository } from '../ports/accounts';

/** How long a console sign-in lasts. */
export const CONSOLE_SESSION_SECONDS = 12 * 3600;

export interface ConsoleSession {
  account: Account;
  csrf: string;
}

/** Signs an account into the console: a new random session id (the cookie) and its CSRF token. */
export async function openConsoleSession(accounts: AccountRepository, account: Account): Promise<{ sessionId: string; csrf: string }> {
  const sessionId = generateKeyMaterial(32);
  const csrf = generateKeyMaterial(32);
  await accounts.openSession({ idHash: sha256(sessionId), accountId: account.id, csrf, seconds: CONSOLE_SESSION_SECONDS });
  return { sessionId, csrf };
}

export async function findConsoleSession(accounts: AccountRepository, sessionId: string): Promise<ConsoleSession> {
  const found = await accounts.session(sha256(sessionId));
  if (!found) throw new InvalidSystemTokenError('the console session has ended; sign in again');
  return found;
}

export async function closeConsoleSession(accounts: AccountRepository, sessionId: string): Promise<void> {
  await accounts.closeSession(sha256(sessionId));
}

/** A write made with the session cookie must carry the session's CSRF token (X-CSRF-Token). */
export function checkCsrf(session: ConsoleSession, sent: string | undefined): void {
  if (!sameSecret(sent ?? '', session.csrf)) {
    throw new ForbiddenError('a write made with the console session needs its X-CSRF-Token header');
  }
}
