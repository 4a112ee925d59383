import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/** A request hook in Fastify's callback form. */
export type RequestHook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/**
 * A request hook from a check that answers at once when it can and returns a promise only when it has to wait (a
 * key not cached yet, a limit counted in PostgreSQL). Fastify goes on in the same turn when `done` is called
 * synchronously; an async hook would cost a promise and a microtask turn on every request.
 */
export function maybeAsyncHook(check: (request: FastifyRequest, reply: FastifyReply) => void | Promise<void>): RequestHook {
  return (request, reply, done) => {
    let pending: void | Promise<void>;
    try {
      pending = check(request, reply);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (pending) pending.then(() => done(), done);
    else done();
  };
}

/** Runs a request hook from a handler (a route that decides from its body whether the hook applies). */
export function runHook(hook: RequestHook, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  return new Promise((resolve, reject) => hook(request, reply, (err) => (err ? reject(err) : resolve())));
}
