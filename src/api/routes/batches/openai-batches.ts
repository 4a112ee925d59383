import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { CreateOptions } from '../../../domain/batches/batch-service';
import type { GatewayDeps } from '../../deps';
import { declareFamily } from '../../errors/route-family';
import { batchCreateBody, batchIdParams, batchListQuery } from '../../../schemas/inference-batches';
import { batchList, batchObject, openAi } from '../../../schemas/batch-responses';
import { callbackUrlOf, originOf } from '../video/shared';

/** A create's request id, public origin and X-Callback-Url (checked against the outbound policy). */
export function createOptions(request: FastifyRequest, deps: GatewayDeps): CreateOptions {
  return { requestId: request.id, callbackUrl: callbackUrlOf(request, deps.outbound), publicOrigin: originOf(request) };
}

/**
 * The OpenAI Batch API: POST /v1/batches, GET /v1/batches/{id}, GET /v1/batches, POST /v1/batches/{id}/cancel. The
 * lines run as the key that created the batch (its models, limits and budget), through the same relay as single calls.
 */
export const openAiBatchRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (base, { deps }) => {
  declareFamily(base, 'openai');
  const app = base.withTypeProvider<ZodTypeProvider>();
  const batches = deps.inferenceBatches;

  app.post('/v1/batches', { onRequest: app.requireApiKey, schema: { body: batchCreateBody, response: openAi(batchObject) } }, async (request) =>
    batches.createOpenAi(request.apiKey, request.body, createOptions(request, deps)),
  );

  app.get('/v1/batches', { onRequest: app.requireApiKey, schema: { querystring: batchListQuery, response: openAi(batchList) } }, async (request) =>
    batches.listOpenAi(request.apiKey.accountId, request.query),
  );

  app.get('/v1/batches/:batch_id', { onRequest: app.requireApiKey, schema: { params: batchIdParams, response: openAi(batchObject) } }, async (request) =>
    batches.get(request.apiKey.accountId, request.params.batch_id, 'openai'),
  );

  app.post('/v1/batches/:batch_id/cancel', { onRequest: app.requireApiKey, schema: { params: batchIdParams, response: openAi(batchObject) } }, async (request) =>
    batches.cancel(request.apiKey.accountId, request.params.batch_id, 'openai'),
  );
};
