import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'config' | 'limits' | 'repos' | 'tokens'>;
import { parseBody } from '../../parse-body';
import { toPage } from '../../../schemas/pagination';
import {
  settingsOf,
  tokenCreateBody,
  tokenIdParam,
  tokenPutBody,
  tokenListQuery,
  tokenPutQuery,
  tokenStatusBody,
  tokenUpdateBody,
} from '../../../schemas/tokens';
import { ok, okPage } from './envelope';
import { envelope, keyLimitsView, managementResponse, tokenRecord } from '../../../schemas/responses';
import { effectiveLimits } from '../../../domain/limits/key-limits';
import { effectivePeriod, nextPeriodStart, periodStart } from '../../../domain/limits/period';

/** `/api/token/*`: the key lifecycle of the spec, thin over the token service. */
export const tokensRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { tokens } = deps;
  // onRequest: the credential is checked before the body is parsed or validated, so a caller without
  // a valid system token learns nothing about the shape of requests.
  const auth = { onRequest: app.requireSystemToken };

  app.get('/api/token/', { ...auth, schema: { querystring: tokenListQuery, response: managementResponse(envelope(z.array(tokenRecord))) } }, async (request, reply) => {
    const { keyword, status, group, after_id: afterId } = request.query;
    return okPage(reply, await tokens.list(request.account.id, toPage(request.query), { keyword, status, group, afterId }));
  });

  app.get('/api/token/:id', { ...auth, schema: { params: tokenIdParam, response: managementResponse(envelope(tokenRecord)) } }, async (request) => {
    return ok(await tokens.get(request.account.id, request.params.id));
  });

  // The key's limits in force (its own, else its group's) and what it has used of them right now, over every replica.
  app.get('/api/token/:id/limits', { ...auth, schema: { params: tokenIdParam, response: managementResponse(envelope(keyLimitsView)) } }, async (request) => {
    const t = await deps.tokens.get(request.account.id, request.params.id);
    const limits = effectiveLimits({ rpmLimit: t.rpm_limit, tpmLimit: t.tpm_limit, maxConcurrency: t.max_concurrency }, t.group, deps.config.current());
    const used = await deps.limits.usage(t.id);
    const nowMs = deps.limits.now();
    const period = effectivePeriod({ periodQuota: t.period_quota, quotaPeriod: t.quota_period }, t.group, deps.config.current());
    const start = period ? periodStart(period.unit, nowMs) : null;
    const row = await deps.repos.keys.periodUsage(t.id);
    const periodUsed = start !== null && row?.period_start === start ? row.period_used : 0;
    return ok({
      rpm_limit: limits.rpm,
      tpm_limit: limits.tpm,
      max_concurrency: limits.concurrency,
      minute_requests: used.requests,
      minute_tokens: used.tokens,
      in_flight: used.inFlight,
      reset_seconds: used.resetSeconds,
      period_quota: period?.quota ?? 0,
      quota_period: period?.unit ?? null,
      period_used: periodUsed,
      period_resets_at: period ? nextPeriodStart(period.unit, nowMs) : null,
    });
  });

  app.post('/api/token/', { ...auth, schema: { body: tokenCreateBody, response: managementResponse(envelope(tokenRecord)) } }, async (request) => {
    return ok(await tokens.create(request.account.id, settingsOf(request.body), request.id));
  });

  app.put('/api/token/', { ...auth, schema: { querystring: tokenPutQuery, body: tokenPutBody, response: managementResponse(envelope(tokenRecord)) } }, async (request) => {
    if (request.query.status_only) {
      const body = parseBody(tokenStatusBody, request.body);
      return ok(await tokens.setStatus(request.account.id, body.id, body.status, request.id));
    }
    const body = parseBody(tokenUpdateBody, request.body);
    return ok(await tokens.update(request.account.id, body.id, settingsOf(body), request.id));
  });

  app.delete('/api/token/:id', { ...auth, schema: { params: tokenIdParam, response: managementResponse(envelope(z.null())) } }, async (request) => {
    await tokens.remove(request.account.id, request.params.id, request.id);
    return ok(null);
  });
};
