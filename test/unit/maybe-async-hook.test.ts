import type { FastifyReply, FastifyRequest } from 'fastify';
import { maybeAsyncHook, runHook } from '../../src/api/plugins/maybe-async-hook';

/** A check that can answer at once goes on in the same turn; one that waits goes on when its promise settles. */
describe('maybeAsyncHook', () => {
  const request = {} as FastifyRequest;
  const reply = {} as FastifyReply;

  it('calls done in the same turn when the check answers at once', () => {
    const done = jest.fn();
    maybeAsyncHook(() => undefined)(request, reply, done);
    expect(done).toHaveBeenCalledTimes(1);
    expect(done).toHaveBeenCalledWith();
  });

  it('passes a thrown error to done, in the same turn', () => {
    const done = jest.fn();
    const err = new Error('refused');
    maybeAsyncHook(() => {
      throw err;
    })(request, reply, done);
    expect(done).toHaveBeenCalledWith(err);
  });

  it('waits for a check that returns a promise, and passes on its rejection', async () => {
    let resolve!: () => void;
    const done = jest.fn();
    maybeAsyncHook(() => new Promise<void>((r) => (resolve = r)))(request, reply, done);
    await Promise.resolve();
    expect(done).not.toHaveBeenCalled();
    resolve();
    await new Promise((r) => setImmediate(r));
    expect(done).toHaveBeenCalledWith();

    const failed = jest.fn();
    const err = new Error('over the limit');
    maybeAsyncHook(() => Promise.reject(err))(request, reply, failed);
    await new Promise((r) => setImmediate(r));
    expect(failed).toHaveBeenCalledWith(err);
  });

  it('runHook gives a handler the hook as a promise', async () => {
    await expect(runHook(maybeAsyncHook(() => undefined), request, reply)).resolves.toBeUndefined();
    await expect(runHook(maybeAsyncHook(() => Promise.reject(new Error('no'))), request, reply)).rejects.toThrow('no');
  });
});
