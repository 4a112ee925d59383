import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { embeddingsEndpoint } from '../../../domain/relay/endpoints/embeddings';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'engine'>;
import { embeddingsBody } from '../../../schemas/embeddings';
import { callerOf } from './relay-transport';
import { embeddingList, openAiResponse } from '../../../schemas/responses';

/** POST /v1/embeddings: relayed, billed per input token. */
export const embeddingsRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  app.post('/v1/embeddings', { onRequest: [app.requireApiKey, app.limitKey], schema: { body: embeddingsBody, response: openAiResponse(embeddingList) } }, async (request, reply) => {
    return deps.engine.unary(embeddingsEndpoint, request.body, callerOf(request, reply));
  });
};
