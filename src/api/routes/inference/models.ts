import type { FastifyPluginAsync } from 'fastify';
import { ModelNotFoundError } from '../../../domain/errors';
import type { GatewayDeps } from '../../deps';
import { z } from 'zod';
import { modelEntry, modelList, openAiResponse } from '../../../schemas/responses';

const anthropicModelList = z.looseObject({
  data: z.array(z.object({ type: z.literal('model'), id: z.string(), display_name: z.string(), created_at: z.string() })),
  has_more: z.boolean(),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
});

const geminiModelList = z.looseObject({ models: z.array(z.looseObject({ name: z.string() })) });

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * GET /v1/models and GET /v1/models/{model}: the models of the gateway config's channels that the key's group
 * may use, narrowed by the key's allowlist. The list is the benchmarked hot path: after authentication (a cache
 * hit) it is one map lookup of JSON serialized once per (group, allowlist) per catalog snapshot.
 */
export const modelsRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  const { catalog } = deps;

  app.get('/v1/models', { onRequest: app.requireApiKey, schema: { response: openAiResponse(z.union([modelList, anthropicModelList, geminiModelList])) } }, async (request, reply) => {
    const snapshot = catalog.current();
    // Anthropic's clients (an agent whose base URL is this gateway) send anthropic-version or x-api-key.
    if (request.headers['anthropic-version'] !== undefined || request.headers['x-api-key'] !== undefined) {
      return snapshot.anthropicList(request.apiKey);
    }
    // Gemini's clients send x-goog-api-key.
    if (request.headers['x-goog-api-key'] !== undefined) {
      return { models: snapshot.geminiList(request.apiKey) };
    }
    reply.type(JSON_TYPE);
    return snapshot.listJson(request.apiKey);
  });

  // A wildcard, so ids containing '/' (common in upstream catalogs) resolve as well.
  app.get('/v1/models/*', { onRequest: app.requireApiKey, schema: { response: openAiResponse(modelEntry) } }, async (request) => {
    const model = (request.params as { '*': string })['*'];
    const snapshot = catalog.current();
    const entry = snapshot.find(request.apiKey, model);
    if (!entry) throw new ModelNotFoundError(model);
    return entry;
  });
};
