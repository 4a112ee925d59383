import type { Tx } from './transactions';

export interface Account {
  id: number;
  username: string;
  /** The operator's role: channel health and global metrics. */
  isAdmin: boolean;
}

export type ThrottleScope = 'username' | 'address';

export interface ThrottleSubject {
  scope: ThrottleScope;
  subject: string;
}

/** Accounts, their credentials (hashes only) and their console sessions. */
export interface AccountRepository {
  /** The new account, or null when the username is taken. */
  insert(a: { username: string; passwordHash: string; systemTokenHash: Buffer; admin: boolean }, tx?: Tx): Promise<Account | null>;
  byUsername(username: string): Promise<Account | null>;
  /** The account and its password hash, for a sign-in. */
  withPasswordHash(username: string): Promise<(Account & { passwordHash: string }) | null>;
  bySystemTokenHash(hash: Buffer): Promise<Account | null>;
  /** False when the account has no such id or already has this token. */
  replaceSystemTokenHash(accountId: number, hash: Buffer, tx?: Tx): Promise<boolean>;
  setPasswordHash(accountId: number, hash: string, tx?: Tx): Promise<void>;
  /** The account after the change, or null when no account has the username. */
  setAdmin(username: string, admin: boolean, tx?: Tx): Promise<Account | null>;

  /** A new console session (the account's expired ones go as it comes). */
  openSession(s: { idHash: Buffer; accountId: number; csrf: string; seconds: number }): Promise<void>;
  /** A live session's account and CSRF token. */
  session(idHash: Buffer): Promise<{ account: Account; csrf: string } | null>;
  closeSession(idHash: Buffer): Promise<void>;
  /** Ends every console session of the account. */
  endSessions(accountId: number, tx?: Tx): Promise<void>;
}

/** Failed sign-in attempts per subject, shared by every replica. */
export interface SignInFailureRepository {
  /** Seconds until the longest lock of these subjects ends (0: none locked). */
  lockedFor(subjects: ThrottleSubject[]): Promise<number>;
  /** Counts a failure (restarting the count when the last one is older than `windowSeconds`); answers the count. */
  countFailure(subject: ThrottleSubject, windowSeconds: number): Promise<number>;
  lock(subject: ThrottleSubject, seconds: number): Promise<void>;
  /** Forgets unlocked subjects whose last failure is older than the window. */
  forgetOld(windowSeconds: number): Promise<void>;
  clear(subject: ThrottleSubject): Promise<void>;
}
