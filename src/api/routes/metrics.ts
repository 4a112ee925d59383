import type { FastifyPluginAsync } from 'fastify';
import { declareFamily } from '../errors/route-family';
import type { GatewayDeps } from '../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'metrics' | 'processGroup'>;
import { ForbiddenError, InvalidApiKeyError } from '../../domain/errors';
import { metricsAuthorized } from '../../observability/metrics';

/**
 * `GET /metrics`: Prometheus text format, the whole gateway's traffic: the operator's view. With METRICS_TOKEN set,
 * only `Authorization: Bearer <METRICS_TOKEN>` reads it (401 otherwise). Without it, only the embedded default
 * (`open`, one developer's machine) serves it to anyone; a production api refuses it with 403.
 */
export const metricsRoutes: FastifyPluginAsync<{ deps: RouteDeps; token?: string | null; open?: boolean }> = async (app, { deps, token, open }) => {
  declareFamily(app, 'openai');
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!token && open === false) throw new ForbiddenError('GET /metrics needs METRICS_TOKEN in production: set it and scrape with Authorization: Bearer <METRICS_TOKEN>');
    if (!metricsAuthorized(request.headers.authorization, token)) throw new InvalidApiKeyError();
    // In a process group, the group's: whichever process the scrape reaches, it counts every process's traffic.
    if (deps.processGroup) {
      const group = await deps.processGroup.metrics();
      return reply.type(group.contentType).send(group.text);
    }
    const body = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(body);
  });
};
