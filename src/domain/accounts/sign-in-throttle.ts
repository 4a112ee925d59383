import { TooManyAttemptsError } from '../errors';
import { ipLiteral } from '../outbound/address-policy';
import type { SignInFailureRepository, ThrottleScope, ThrottleSubject } from '../ports/accounts';

export type { ThrottleScope, ThrottleSubject };

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

export const THROTTLE_RULES: Record<ThrottleScope, ThrottleRule> = {
  // A person mistypes a few times; a guesser makes thousands of attempts.
  username: { threshold: 5, maxLockSeconds: 15 * 60 },
  // An office behind one NAT address holds many people.
  address: { threshold: 20, maxLockSeconds: 15 * 60 },
};

/** Failures older than this start the count again. */
export const THROTTLE_WINDOW_SECONDS = 15 * 60;

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
export async function assertNotLocked(failures: SignInFailureRepository, subjects: ThrottleSubject[]): Promise<void> {
  const wait = await failures.lockedFor(subjects);
  if (wait > 0) throw new TooManyAttemptsError(wait);
}

/** Counts a failure against each subject and locks those past their threshold; returns the longest lock (s). */
export async function recordFailure(failures: SignInFailureRepository, subjects: ThrottleSubject[]): Promise<number> {
  let longest = 0;
  for (const subject of subjects) {
    const lock = lockSecondsAfter(THROTTLE_RULES[subject.scope], await failures.countFailure(subject, THROTTLE_WINDOW_SECONDS));
    if (lock > 0) {
      await failures.lock(subject, lock);
      longest = Math.max(longest, lock);
    }
  }
  // Old rows go as new ones come: there is no sweeper to run.
  await failures.forgetOld(THROTTLE_WINDOW_SECONDS);
  return longest;
}
