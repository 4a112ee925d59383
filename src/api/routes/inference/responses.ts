import websocket from '@fastify/websocket';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { GatewayDeps } from '../../deps';
import { DEFAULT_JSON_LIMITS, type JsonShapeLimits } from '../../../domain/json-shape';
import { inputTokensBody, responsesBody, storedResponseParams } from '../../../schemas/openai-responses';
import { NotFoundError, UpgradeRequiredError, ValidationError } from '../../../domain/errors';
import { openAiResponse } from '../../../schemas/responses';
import { callerOf, forwardedQuery, namedSseSink } from './relay-transport';
import { answerHandshakesInFamily, refuseBadHandshake } from '../../plugins/websocket-handshakes';
import { serveResponsesSocket } from './responses-websocket';
import { responsesCountEndpoint, responsesEndpoint, responsesStreamEndpoint, storedResponse } from '../../../domain/relay/endpoints/responses';

const responseObject = z.looseObject({ id: z.string(), object: z.literal('response'), status: z.string(), output: z.array(z.looseObject({})) });

/**
 * POST /v1/responses: the OpenAI Responses API (what Codex speaks), plain or streamed as named SSE events, relayed
 * with failover and billed from the upstream's usage by dimension; errors in the OpenAI format.
 */
export const responsesRoutes: FastifyPluginAsync<{ deps: GatewayDeps; webSocket?: boolean; webSocketMaxBytes?: number; jsonLimits?: JsonShapeLimits }> = async (
  base,
  { deps, webSocket = true, webSocketMaxBytes = 10 * 1024 * 1024, jsonLimits = DEFAULT_JSON_LIMITS },
) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  app.post('/v1/responses', { onRequest: [app.requireApiKey, app.limitKey], schema: { body: responsesBody, response: openAiResponse(responseObject) } }, async (request, reply) => {
    const body = request.body;
    const caller = callerOf(request, reply);
    if (body.stream !== true) return deps.engine.unary(responsesEndpoint, body, caller);
    await deps.engine.stream(responsesStreamEndpoint, body, caller, namedSseSink(request, reply));
    return reply;
  });

  // Codex (its built-in provider, or a provider with supports_websockets = true) first asks for the Responses API
  // over a WebSocket (responses-websocket.ts). Turned off, the upgrade is a 426: Codex then uses HTTP at once, where a
  // 404 costs each session five reconnects (about 7 s) before its first answer.
  // The WebSocket plugin wraps every route registered beside it: only this one, in a context of its own, so an
  // upgrade asked of any other route is answered over HTTP like any request.
  await app.register(async (ws) => {
    if (webSocket) {
      await ws.register(websocket, { options: { maxPayload: webSocketMaxBytes } });
      answerHandshakesInFamily(ws);
    }
    ws.route({
      method: 'GET',
      url: '/v1/responses',
      onRequest: app.requireApiKey,
      // Before the WebSocket plugin's handler hands the socket to `ws`: a handshake `ws` would refuse is refused
      // here, in the OpenAI format with x-request-id.
      ...(webSocket && { preHandler: refuseBadHandshake }),
      schema: { hide: true },
      handler: async (request) => {
        if (!/\bwebsocket\b/i.test(request.headers.upgrade ?? '')) throw new NotFoundError(`Unknown request URL: GET ${request.url.split('?')[0]}`);
        throw new UpgradeRequiredError('The Responses API is served over HTTP (POST /v1/responses) on this gateway, not over a WebSocket');
      },
      ...(webSocket && { wsHandler: (socket, request) => serveResponsesSocket(socket, request, deps, { jsonLimits, maxInputBytes: webSocketMaxBytes }) }),
    });
  });

  app.post('/v1/responses/input_tokens', { onRequest: [app.requireApiKey, app.limitKey], schema: { body: inputTokensBody, response: openAiResponse(inputTokensAnswer) } }, async (request, reply) =>
    deps.engine.count(responsesCountEndpoint, request.body, callerOf(request, reply)),
  );

  // A stored Response's endpoints reach the channel that made it (its id says which); the upstream's JSON answers.
  const stored = (method: 'GET' | 'POST' | 'DELETE', suffix: '' | '/cancel' | '/input_items') => ({
    onRequest: app.requireApiKey,
    schema: { params: storedResponseParams, response: openAiResponse(z.looseObject({})) },
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const { id } = request.params as { id: string };
      const query = forwardedQuery(request) ?? '';
      // A streamed retrieval would bypass metering and id rewriting: not relayed.
      if (new URLSearchParams(query).get('stream') === 'true') throw new ValidationError('stream: retrieving a response as a stream is not supported through the gateway', 'stream');
      return storedResponse(deps.engine, id, { method, suffix, query }, callerOf(request, reply));
    },
  });
  app.get('/v1/responses/:id', stored('GET', ''));
  app.delete('/v1/responses/:id', stored('DELETE', ''));
  app.post('/v1/responses/:id/cancel', stored('POST', '/cancel'));
  app.get('/v1/responses/:id/input_items', stored('GET', '/input_items'));
};

const inputTokensAnswer = z.looseObject({ object: z.string(), input_tokens: z.int() });
