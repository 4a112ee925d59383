import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { moderationsEndpoint } from '../../../domain/relay/endpoints/moderations';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'engine'>;
import { moderationsBody } from '../../../schemas/moderations';
import { moderationResult, openAiResponse } from '../../../schemas/responses';
import { callerOf } from './relay-transport';

/** POST /v1/moderations: relayed as is; billed per token when the model has prices, free otherwise. */
export const moderationsRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const response = openAiResponse(moderationResult);
  app.post('/v1/moderations', { onRequest: [app.requireApiKey, app.limitKey], schema: { body: moderationsBody, response } }, async (request, reply) => {
    return deps.engine.unary(moderationsEndpoint, request.body, callerOf(request, reply));
  });
};
