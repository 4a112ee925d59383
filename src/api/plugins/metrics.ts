import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { GatewayDeps } from '../deps';
import { familyOf } from '../errors/route-family';
import { requestedModel } from './request-id';

/** The model label of a request: one the gateway config prices, `other` for any other name, '' for none. */
function modelOf(request: FastifyRequest, deps: GatewayDeps): string {
  const model = requestedModel(request);
  if (model === undefined) return '';
  return Object.hasOwn(deps.config.current().models, model) ? model : 'other';
}

/** Every answered request into gateway_http_request_duration_seconds (src/observability/metrics.ts). */
export const metricsPlugin = fp<{ deps: GatewayDeps }>(async (app, { deps }) => {
  const { requests } = deps.metrics;
  // A callback hook, not an async one: no promise per request on the hot path.
  app.addHook('onResponse', (request, reply, done) => {
    requests.observe({ family: familyOf(request), status: String(reply.statusCode), model: modelOf(request, deps) }, reply.elapsedTime / 1000);
    done();
  });
}) as FastifyPluginAsync<{ deps: GatewayDeps }>;
