import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ModelNotFoundError, NotFoundError } from '../../../domain/errors';
import type { GeminiEmbedRequest } from '../../../domain/ports/gemini';
import {
  geminiCall,
  geminiCountEndpoint,
  geminiEmbedEndpoint,
  geminiGenerateEndpoint,
  geminiStreamEndpoint,
} from '../../../domain/relay/endpoints/gemini';
import type { GeminiRequest } from '../../../domain/translate/gemini-types';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'catalog' | 'engine'>;
import { declareFamily } from '../../errors/route-family';
import { parseBody } from '../../parse-body';
import { runHook } from '../../plugins/maybe-async-hook';
import { batchEmbedContentsBody, countTokensBody, embedContentBody, generateContentBody, geminiAnswer, geminiModel } from '../../../schemas/gemini';
import { geminiErrors } from '../../../schemas/responses';
import { z } from 'zod';
import { callerOf, jsonArraySink, sseSink } from './relay-transport';

/**
 * The Gemini API: `POST /v1beta/models/{model}:{action}` (and the same under `/v1/`) for generateContent,
 * streamGenerateContent (SSE with `?alt=sse`, else a streamed JSON array), countTokens, embedContent and
 * batchEmbedContents; `GET /v1beta/models` and `/v1beta/models/{model}` in Gemini's shapes. The key comes in
 * `x-goog-api-key`, `?key=` or `Authorization: Bearer`; errors are Google's `{error: {code, message, status}}`.
 * countTokens is never billed and does not count against the key's request limits.
 */
export const geminiRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (app, { deps }) => {
  declareFamily(app, 'gemini');
  const { catalog } = deps;

  const action = async (request: FastifyRequest, reply: FastifyReply) => {
    // The router has decoded the path parameter already, as for GET /v1/models/*.
    const target = (request.params as { '*': string })['*'];
    const colon = target.lastIndexOf(':');
    const model = colon > 0 ? target.slice(0, colon) : '';
    const verb = colon > 0 ? target.slice(colon + 1) : '';
    switch (verb) {
      case 'generateContent':
      case 'streamGenerateContent':
        await admit(request, reply);
        return generate(request, reply, model, verb === 'streamGenerateContent');
      case 'countTokens':
        return deps.engine.count(geminiCountEndpoint, geminiCall(model, parseBody(countTokensBody, request.body)), callerOf(request, reply));
      case 'embedContent': {
        await admit(request, reply);
        const body = parseBody(embedContentBody, request.body);
        const out = await deps.engine.unary(geminiEmbedEndpoint, geminiCall(model, { requests: [body] } as GeminiEmbedRequest), callerOf(request, reply));
        return { embedding: out.embeddings[0] };
      }
      case 'batchEmbedContents': {
        await admit(request, reply);
        const body = parseBody(batchEmbedContentsBody, request.body) as GeminiEmbedRequest;
        return deps.engine.unary(geminiEmbedEndpoint, geminiCall(model, body), callerOf(request, reply));
      }
      default:
        throw new NotFoundError(`${request.url.split('?')[0]} is not a method of the Gemini API this gateway serves`);
    }
  };

  const admit = (request: FastifyRequest, reply: FastifyReply) => runHook(app.limitKey, request, reply);

  async function generate(request: FastifyRequest, reply: FastifyReply, model: string, stream: boolean) {
    const call = geminiCall(model, parseBody(generateContentBody, request.body) as GeminiRequest);
    const caller = callerOf(request, reply);
    if (!stream) return deps.engine.unary(geminiGenerateEndpoint, call, caller);
    const sse = (request.query as { alt?: unknown }).alt === 'sse';
    await deps.engine.stream(geminiStreamEndpoint, call, caller, sse ? sseSink(request, reply) : jsonArraySink(request, reply));
    return reply;
  }

  for (const prefix of ['/v1beta/models/*', '/v1/models/*']) {
    app.post(prefix, { onRequest: app.requireApiKey, schema: { response: { 200: geminiAnswer, ...geminiErrors } } }, action);
  }

  app.get('/v1beta/models', { onRequest: app.requireApiKey, schema: { response: { 200: z.object({ models: z.array(geminiModel) }), ...geminiErrors } } }, async (request) => ({
    models: catalog.current().geminiList(request.apiKey),
  }));

  app.get('/v1beta/models/*', { onRequest: app.requireApiKey, schema: { response: { 200: geminiModel, ...geminiErrors } } }, async (request) => {
    const model = (request.params as { '*': string })['*'];
    const snapshot = catalog.current();
    if (!snapshot.find(request.apiKey, model)) throw new ModelNotFoundError(model);
    return snapshot.geminiModel(model);
  });
};

