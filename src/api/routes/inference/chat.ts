import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'engine'>;
import { chatCompletionBody } from '../../../schemas/chat';
import { callerOf, sseSink } from './relay-transport';
import { chatEndpoint, chatStreamEndpoint } from '../../../domain/relay/endpoints/chat';
import { chatCompletion, openAiResponse } from '../../../schemas/responses';

/** POST /v1/chat/completions: plain or streamed (SSE), relayed with failover and billed from the upstream's usage. */
export const chatRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  app.post('/v1/chat/completions', { onRequest: [app.requireApiKey, app.limitKey], schema: { body: chatCompletionBody, response: openAiResponse(chatCompletion) } }, async (request, reply) => {
    const body = request.body;
    const caller = callerOf(request, reply);
    if (body.stream !== true) return deps.engine.unary(chatEndpoint, body, caller);
    await deps.engine.stream(chatStreamEndpoint, body, caller, sseSink(request, reply));
    return reply;
  });
};
