import type { Pool } from 'pg';
import { TooManyAttemptsError } from '../errors';
import { ipLiteral } from '../outbound/address-policy';

/**
 * Failed password and token attempts, counted in PostgreSQL so every replica sees the same count. A subject (the
 * username tried, or the client's address) that fails `threshold` times within the window is locked for 2 s,
 * then 4, 8... up to `maxLockSeconds` per further failure; a lock refuses attempts before any password is checked.
 * A success clears the username's count, never the address's (an attacker could otherwise reset it by signing in
 * to an account of their own between guesses).
 */
export interface ThrottleRule {
  threshold: number;
  maxLockSeconds: number;
}

export type ThrottleScope = 'username' | 'address';

export const THROTTLE_RULES: Record<ThrottleScope, ThrottleRule> = {
  // A person mistypes a few times; a guesser makes thousands of attempts.
  username: { threshold: 5, maxLockSeconds: 15 * 60 },
  // An office behind one NAT address holds many people.
  address: { threshold: 20, maxLockSeconds: 15 * 60 },
};

/** Failures older than this start the count again. */
export const THROTTLE_WINDOW_SECONDS = 15 * 60;

export interface ThrottleSubject {
  scope: ThrottleScope;
  subject: string;
}

/**
 * The client's address as a throttle subject. Loopback clients are not throttled by address: a reverse proxy on
 * the same host without TRUST_PROXY makes every client look like 127.0.0.1, and one guesser would lock them all
 * out (the username scope still holds).
 */
export function addressSubjects(ctx: { address?: string }): ThrottleSubject[] {
  if (!ctx.address) return [];
  const ip = ipLiteral(ctx.address);
  if (ip?.range() === 'loopback') return [];
  return [{ scope: 'address', subject: ip ? ip.toNormalizedString() : ctx.address }];
}

/** Seconds a subject is locked after its `failures`-th failure in a row. */
export function lockSecondsAfter(rule: ThrottleRule, failures: number): number {
  if (failures < rule.threshold) return 0;
  return Math.min(rule.maxLockSeconds, 2 ** Math.min(30, failures - rule.threshold + 1));
}

/** Throws TooManyAttemptsError while any of the subjects is locked. */
export async function assertNotLocked(db: Pool, subjects: ThrottleSubject[]): Promise<void> {
  const res = await db.query<{ wait: number }>(
    `SELECT ceil(extract(epoch FROM max(locked_until) - now()))::int AS wait FROM sign_in_failures
      WHERE (scope, subject) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND locked_until > now()`,
    [subjects.map((s) => s.scope), subjects.map((s) => s.subject)],
  );
  const wait = res.rows[0]?.wait;
  if (wait != null && wait > 0) throw new TooManyAttemptsError(wait);
}

/** Counts a failure against each subject and locks those past their threshold; returns the longest lock (s). */
export async function recordFailure(db: Pool, subjects: ThrottleSubject[]): Promise<number> {
  let longest = 0;
  for (const { scope, subject } of subjects) {
    const res = await db.query<{ failures: number }>(
      `INSERT INTO sign_in_failures AS f (scope, subject, failures, last_failure_at) VALUES ($1, $2, 1, now())
       ON CONFLICT (scope, subject) DO UPDATE SET
         failures = CASE WHEN f.last_failure_at < now() - $3::int * interval '1 second' THEN 1 ELSE f.failures + 1 END,
         last_failure_at = now()
       RETURNING failures`,
      [scope, subject, THROTTLE_WINDOW_SECONDS],
    );
    const lock = lockSecondsAfter(THROTTLE_RULES[scope], res.rows[0].failures);
    if (lock > 0) {
      await db.query(`UPDATE sign_in_failures SET locked_until = now() + $3::int * interval '1 second' WHERE scope = $1 AND subject = $2`, [scope, subject, lock]);
      longest = Math.max(longest, lock);
    }
  }
  // Old rows go as new ones come: there is no sweeper to run.
  await db.query(`DELETE FROM sign_in_failures WHERE last_failure_at < now() - $1::int * interval '1 second' AND (locked_until IS NULL OR locked_until < now())`, [
    THROTTLE_WINDOW_SECONDS,
  ]);
  return longest;
}

export async function clearFailures(db: Pool, subject: ThrottleSubject): Promise<void> {
  await db.query('DELETE FROM sign_in_failures WHERE scope = $1 AND subject = $2', [subject.scope, subject.subject]);
}
