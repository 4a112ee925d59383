import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { declareFamily } from '../errors/route-family';
import type { GatewayDeps } from '../deps';
import { InvalidApiKeyError } from '../../domain/errors';

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * `GET /metrics`: Prometheus text format. With METRICS_TOKEN set, only `Authorization: Bearer <METRICS_TOKEN>`
 * reads it (401 otherwise); without it, anyone who reaches the port does (keep it on a private network then).
 */
export const metricsRoutes: FastifyPluginAsync<{ deps: GatewayDeps; token?: string | null }> = async (app, { deps, token }) => {
  declareFamily(app, 'openai');
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (token) {
      const header = request.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice(7) : '';
      if (!sameSecret(given, token)) throw new InvalidApiKeyError();
    }
    const body = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(body);
  });
};
