import type { FastifyPluginAsync } from 'fastify';
import { ModelNotFoundError } from '../../../domain/errors';
import type { GatewayDeps } from '../../deps';
import { modelEntry, modelList, openAiResponse } from '../../schemas/responses';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * GET /v1/models and GET /v1/models/{model}: the models of the gateway config's channels that the key's group
 * may use, narrowed by the key's allowlist. The list is the benchmarked hot path: after authentication (a cache
 * hit) it is one map lookup of JSON serialized once per (group, allowlist) per catalog snapshot.
 */
export const modelsRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  const { catalog } = deps;

  app.get('/v1/models', { onRequest: app.requireApiKey, schema: { response: openAiResponse(modelList) } }, async (request, reply) => {
    const snapshot = catalog.current();
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
