import { ApplicationFailure } from '@temporalio/common';
import { ConflictError, NotFoundError, RateLimitedError, ValidationError } from '../../src/domain/errors';
import { asActivityFailure, isPermanentFault } from '../../src/worker/permanent-faults';

/** Which activity faults a retry cannot fix: those end the workflow's work at once, the others are retried. */
describe('permanent activity faults', () => {
  const sql = (code: string) => Object.assign(new Error(`sqlstate ${code}`), { code });

  it.each([
    ['a stack overflow', new RangeError('Maximum call stack size exceeded'), true],
    ['malformed JSON', new SyntaxError('Unexpected token'), true],
    ['a programming error', new TypeError("Cannot read properties of undefined (reading 'x')"), true],
    ['a NUL PostgreSQL cannot store (22P05)', sql('22P05'), true],
    ['a byte sequence PostgreSQL refuses (22021)', sql('22021'), true],
    ['a constraint violation (23505)', sql('23505'), true],
    ['a refused request (400)', new ValidationError('bad'), true],
    ['something gone (404)', new NotFoundError('gone'), true],
    ['a network failure (fetch failed, with its cause)', new TypeError('fetch failed', { cause: new Error('ECONNREFUSED') }), false],
    ['a connection reset', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), false],
    ['a database restarting (57P01)', sql('57P01'), false],
    ['a serialization failure (40001)', sql('40001'), false],
    ['a lost connection (08006)', sql('08006'), false],
    ['a rate limit (429)', new RateLimitedError('slow down'), false],
    ['a conflict of the moment (409)', new ConflictError('busy'), false],
    ['a plain error', new Error('something'), false],
    ['an ApplicationFailure, which says itself', ApplicationFailure.retryable('x'), false],
  ])('%s: permanent %s', (_name, err, permanent) => {
    expect(isPermanentFault(err)).toBe(permanent);
  });

  it('a permanent fault becomes a non-retryable ApplicationFailure keeping its message, kind and cause', () => {
    const cause = new RangeError('Maximum call stack size exceeded');
    const failure = asActivityFailure(cause) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(cause.message);
    expect(failure.type).toBe('RangeError');
    expect(failure.cause).toBe(cause);
    const passing = new Error('read ECONNRESET');
    expect(asActivityFailure(passing)).toBe(passing);
  });
});
