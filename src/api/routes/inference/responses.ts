import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ResponsesRequest } from '../../../upstream/responses-adapter';
import type { GatewayDeps } from '../../deps';
import { responsesBody } from '../../schemas/openai-responses';
import { openAiResponse } from '../../schemas/responses';
import { callerOf, namedSseSink } from './relay-transport';

const responseObject = z.looseObject({ id: z.string(), object: z.literal('response'), status: z.string(), output: z.array(z.looseObject({})) });

/**
 * POST /v1/responses: the OpenAI Responses API (what Codex speaks), plain or streamed as named SSE events, relayed
 * with failover and billed from the upstream's usage by dimension; errors in the OpenAI format.
 */
export const responsesRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  app.post('/v1/responses', { onRequest: app.requireApiKey, schema: { body: responsesBody, response: openAiResponse(responseObject) } }, async (request, reply) => {
    const body = request.body as ResponsesRequest;
    const caller = callerOf(request, reply);
    if (body.stream !== true) return deps.responses.responses(body, caller);
    await deps.responses.responsesStream(body, caller, namedSseSink(request, reply));
    return reply;
  });
};
