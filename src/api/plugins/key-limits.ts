import type { FastifyRequest, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import type { PeriodBudget } from '../../domain/billing/holds';
import { type Admission, KeyLimitError, UNLIMITED } from '../../domain/limits/admission';
import { keyAdmission } from '../../domain/limits/key-admission';
import type { GatewayDeps } from '../deps';
import { maybeAsyncHook, type RequestHook } from './maybe-async-hook';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key's admission under its rate limits (after `limitKey`); frees its in-flight slot when the answer ends. */
    keyAdmission: Admission;
    /** The key's periodic budget in force and the current period (after `limitKey`); billing counts the call in it. */
    keyPeriod: PeriodBudget | undefined;
  }
  interface FastifyInstance {
    /** After requireApiKey, on the routes that count against a key's limits: 429 when over one. */
    limitKey: RequestHook;
  }
}

/**
 * Per-key limits for the inference and video-submit routes: counted in PostgreSQL so every replica shares them.
 * The `x-ratelimit-*` headers go on the raw response, so streamed answers (written past Fastify) carry them too.
 * A refused request reaches no upstream and is not billed.
 */
export const keyLimitsPlugin = fp(async (app, opts: { deps: GatewayDeps }) => {
  app.decorateRequest('keyAdmission', null as unknown as Admission);
  app.decorateRequest('keyPeriod', undefined);

  const admitted = (request: FastifyRequest, reply: FastifyReply, admission: Admission, period: PeriodBudget | undefined) => {
    request.keyAdmission = admission;
    request.keyPeriod = period;
    if (admission === UNLIMITED) return;
    for (const [k, v] of Object.entries(admission.headers)) reply.raw.setHeader(k, v);
    // 'close' comes when the answer is complete or the client went away: either way the slot is free at once. A
    // client gone while the admission was being decided closed before this listener: the slot is freed now.
    if (reply.raw.destroyed) admission.release();
    else reply.raw.once('close', admission.release);
  };

  app.decorate('limitKey', maybeAsyncHook((request, reply) => {
    const { admission, period } = keyAdmission(opts.deps, request.apiKey);
    if (!(admission instanceof Promise)) return admitted(request, reply, admission, period);
    return admission.then(
      (a) => admitted(request, reply, a, period),
      (err: unknown) => {
        if (err instanceof KeyLimitError) for (const [k, v] of Object.entries(err.headers)) reply.raw.setHeader(k, v);
        throw err;
      },
    );
  }));
});
