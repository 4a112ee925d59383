import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { clientRerankShape, rerankBodyFor, rerankEndpoint } from '../../../domain/relay/endpoints/rerank';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'engine'>;
import { rerankBody } from '../../../schemas/rerank';
import { openAiResponse, rerankResult } from '../../../schemas/responses';
import { callerOf } from './relay-transport';

/**
 * POST /v1/rerank, /rerank (Cohere's shape, or Jina's to a client that speaks it) and /v2/rerank (Cohere's).
 */
export const rerankRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const response = openAiResponse(rerankResult);
  for (const path of ['/v1/rerank', '/rerank', '/v2/rerank']) {
    app.post(path, { onRequest: [app.requireApiKey, app.limitKey], schema: { body: rerankBody, response } }, async (request, reply) => {
      const result = await deps.engine.unary(rerankEndpoint, request.body, callerOf(request, reply));
      const shape = path === '/v2/rerank' ? 'cohere' : clientRerankShape(request.body);
      return rerankBodyFor(request.body, result, shape, request.id);
    });
  }
};
