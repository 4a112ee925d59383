import { ApplicationFailure } from '@temporalio/common';
import { DomainError } from '../domain/errors';

/**
 * Faults no retry of an activity can fix: the same input fails the same way every time. The worker turns them into
 * non-retryable failures, so the workflow handles them at once (a batch ends `failed` with the reason) instead of
 * retrying them until its attempts run out.
 */

/** SQLSTATE classes of the input, not of the moment: data exceptions, integrity violations, syntax, program limits. */
const PERMANENT_SQLSTATE_CLASSES = new Set(['22', '23', '42', '54']);

/** Refusals of a request that a retry would repeat (not a timeout, a conflict of the moment or a rate limit). */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 409, 425, 429]);

export function isPermanentFault(err: unknown): boolean {
  if (err instanceof ApplicationFailure) return false;
  if (err instanceof DomainError) return err.status >= 400 && err.status < 500 && !RETRYABLE_CLIENT_STATUSES.has(err.status);
  if (err instanceof RangeError || err instanceof SyntaxError) return true;
  // A network failure (undici's `fetch failed`) is a TypeError with the socket's error as its cause: retried.
  if (err instanceof TypeError) return err.cause === undefined;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && PERMANENT_SQLSTATE_CLASSES.has(code.slice(0, 2));
}

/** The failure the activity ends with: permanent faults as non-retryable, with their message and kind; others as they are. */
export function asActivityFailure(err: unknown): unknown {
  if (!isPermanentFault(err)) return err;
  const e = err as Error;
  return ApplicationFailure.create({ message: e.message, type: e.name === 'Error' ? 'PermanentFault' : e.name, nonRetryable: true, cause: e });
}
