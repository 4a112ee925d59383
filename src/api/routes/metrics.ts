import type { FastifyPluginAsync } from 'fastify';
import { declareFamily } from '../errors/route-family';
import type { GatewayDeps } from '../deps';
import { InvalidApiKeyError } from '../../domain/errors';
import { metricsAuthorized } from '../../observability/metrics';

/**
 * `GET /metrics`: Prometheus text format. With METRICS_TOKEN set, only `Authorization: Bearer <METRICS_TOKEN>`
 * reads it (401 otherwise); without it, anyone who reaches the port does (keep it on a private network then).
 */
export const metricsRoutes: FastifyPluginAsync<{ deps: GatewayDeps; token?: string | null }> = async (app, { deps, token }) => {
  declareFamily(app, 'openai');
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!metricsAuthorized(request.headers.authorization, token)) throw new InvalidApiKeyError();
    const body = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(body);
  });
};
