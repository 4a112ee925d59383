import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { Readable } from 'node:stream';
import { ValidationError } from '../../../domain/errors';
import type { GatewayDeps } from '../../deps';
import { declareFamily } from '../../errors/route-family';
import { jsonShapeProblem } from '../../../domain/json-shape';
import { MAX_MESSAGE_BATCH_BYTES, MAX_MESSAGE_BATCH_REQUESTS, messageBatchCreateBody, messageBatchIdParams, messageBatchListQuery } from '../../../schemas/inference-batches';
import { originOf } from '../video/shared';
import { anthropic, messageBatch, messageBatchDeleted, messageBatchList, messageBatchResultsResponse } from '../../../schemas/batch-responses';
import { createOptions } from './openai-batches';

/** One line of the results JSONL, as Anthropic writes it. */
function resultOf(line: { custom_id: string; state: string; result: unknown }): string {
  const result =
    line.state === 'succeeded'
      ? { type: 'succeeded', message: line.result }
      : line.state === 'failed'
        ? { type: 'errored', error: line.result }
        : { type: line.state === 'canceled' ? 'canceled' : 'expired' };
  return `${JSON.stringify({ custom_id: line.custom_id, result })}\n`;
}

/**
 * Anthropic Message Batches: POST /v1/messages/batches (up to 100,000 requests or 256 MB), GET one, GET the list,
 * POST cancel, GET results (JSONL), DELETE. Each request runs as a call to /v1/messages would, on any channel the
 * model has (translated where it is not an `anthropic` one), and answers in the Messages shape.
 */
export const messageBatchRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (base, { deps }) => {
  declareFamily(base, 'anthropic');
  const app = base.withTypeProvider<ZodTypeProvider>();
  const batches = deps.inferenceBatches;

  // A batch's body is larger and longer than any single call's: its own bounds, the same checks before parsing.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: MAX_MESSAGE_BATCH_BYTES }, (request, body, done) => {
    const problem = jsonShapeProblem(body as string, { maxDepth: 64, maxArrayLength: MAX_MESSAGE_BATCH_REQUESTS });
    if (problem) {
      const what = problem.kind === 'depth' ? `nests arrays and objects more than ${problem.limit} levels deep` : `has an array of more than ${problem.limit} elements`;
      return done(new ValidationError(`The request body ${what}`), undefined);
    }
    return parseJson(request, body as string, done);
  });

  app.post(
    '/v1/messages/batches',
    { onRequest: app.requireApiKey, bodyLimit: MAX_MESSAGE_BATCH_BYTES, schema: { body: messageBatchCreateBody, response: anthropic(messageBatch) } },
    async (request) => {
      const requests = request.body.requests;
      const seen = new Set<string>();
      requests.forEach((r, i) => {
        if (seen.has(r.custom_id)) throw new ValidationError(`requests.${i}.custom_id: '${r.custom_id}' is used by an earlier request`, `requests.${i}.custom_id`);
        seen.add(r.custom_id);
        if ((r.params as { stream?: unknown }).stream === true) throw new ValidationError(`requests.${i}.params.stream: batch requests cannot be streamed`, `requests.${i}.params.stream`);
      });
      return batches.createAnthropic(request.apiKey, requests as never, createOptions(request, deps));
    },
  );

  app.get('/v1/messages/batches', { onRequest: app.requireApiKey, schema: { querystring: messageBatchListQuery, response: anthropic(messageBatchList) } }, async (request) =>
    batches.listAnthropic(request.apiKey.accountId, { limit: request.query.limit, beforeId: request.query.before_id, afterId: request.query.after_id }, originOf(request)),
  );

  app.get('/v1/messages/batches/:message_batch_id', { onRequest: app.requireApiKey, schema: { params: messageBatchIdParams, response: anthropic(messageBatch) } }, async (request) =>
    batches.get(request.apiKey.accountId, request.params.message_batch_id, 'anthropic', originOf(request)),
  );

  app.post('/v1/messages/batches/:message_batch_id/cancel', { onRequest: app.requireApiKey, schema: { params: messageBatchIdParams, response: anthropic(messageBatch) } }, async (request) =>
    batches.cancel(request.apiKey.accountId, request.params.message_batch_id, 'anthropic', originOf(request)),
  );

  app.delete('/v1/messages/batches/:message_batch_id', { onRequest: app.requireApiKey, schema: { params: messageBatchIdParams, response: anthropic(messageBatchDeleted) } }, async (request) =>
    batches.remove(request.apiKey.accountId, request.params.message_batch_id),
  );

  app.get('/v1/messages/batches/:message_batch_id/results', { onRequest: app.requireApiKey, schema: { params: messageBatchIdParams, response: messageBatchResultsResponse } }, async (request, reply) => {
    const pages = batches.resultLines(request.apiKey.accountId, request.params.message_batch_id);
    // The first page is read before answering, so a batch not found or not ended is a proper error.
    const first = await pages.next();
    const body = Readable.from(
      (async function* () {
        if (!first.done) yield first.value.map(resultOf).join('');
        for await (const page of pages) yield page.map(resultOf).join('');
      })(),
    );
    reply.raw.once('close', () => body.destroy());
    return reply.header('content-type', 'application/binary').send(body as never);
  });
};
