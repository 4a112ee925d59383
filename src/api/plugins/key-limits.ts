import type { FastifyRequest, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import type { PeriodBudget } from '../../domain/billing/holds';
import { effectiveLimits } from '../../domain/limits/key-limits';
import { periodBudget } from '../../domain/limits/period';
import { type Admission, KeyLimitError, UNLIMITED } from '../../domain/limits/rate-limiter';
import type { ApiKeyPrincipal } from '../../domain/keys/key-auth';
import type { GatewayDeps } from '../deps';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key's admission under its rate limits (after `limitKey`); frees its in-flight slot when the answer ends. */
    keyAdmission: Admission;
    /** The key's periodic budget in force and the current period (after `limitKey`); billing counts the call in it. */
    keyPeriod: PeriodBudget | undefined;
  }
  interface FastifyInstance {
    /** After requireApiKey, on the routes that count against a key's limits: 429 when over one. */
    limitKey: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  }
}

/**
 * Per-key limits for the inference and video-submit routes: counted in PostgreSQL so every replica shares them.
 * The `x-ratelimit-*` headers go on the raw response, so streamed answers (written past Fastify) carry them too.
 * A refused request reaches no upstream and is not billed.
 */
/**
 * One call's admission under its key's limits (its own, else its group's) and the periodic budget in force: a
 * KeyLimitError when the key is over them. The admission's `release` frees its in-flight slot.
 */
export async function admitKey(deps: Pick<GatewayDeps, 'limits' | 'config'>, key: ApiKeyPrincipal): Promise<{ admission: Admission; period: PeriodBudget | undefined }> {
  const snapshot = deps.config.current();
  const period = periodBudget(key, key.group, snapshot, deps.limits.now());
  return { admission: await deps.limits.admit(key.tokenId, effectiveLimits(key, key.group, snapshot)), period };
}

export const keyLimitsPlugin = fp(async (app, opts: { deps: GatewayDeps }) => {
  app.decorateRequest('keyAdmission', null as unknown as Admission);
  app.decorateRequest('keyPeriod', undefined);
  app.decorate('limitKey', async (request: FastifyRequest, reply: FastifyReply) => {
    let admission: Admission;
    try {
      const admitted = await admitKey(opts.deps, request.apiKey);
      admission = admitted.admission;
      request.keyPeriod = admitted.period;
    } catch (err) {
      if (err instanceof KeyLimitError) for (const [k, v] of Object.entries(err.headers)) reply.raw.setHeader(k, v);
      throw err;
    }
    request.keyAdmission = admission;
    if (admission === UNLIMITED) return;
    for (const [k, v] of Object.entries(admission.headers)) reply.raw.setHeader(k, v);
    // 'close' comes when the answer is complete or the client went away: either way the slot is free at once.
    reply.raw.once('close', admission.release);
  });
});
