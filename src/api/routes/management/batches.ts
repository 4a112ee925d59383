import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ValidationError } from '../../../domain/errors';
import type { GatewayDeps } from '../../deps';
import {
  batchCreateBody,
  batchIdParam,
  batchRotateBody,
  batchStatusBody,
  batchStatusQuery,
  idempotencyHeaders,
  issueInputOf,
} from '../../schemas/batches';
import { paginationQuery, toPage } from '../../schemas/pagination';
import { ok, okPage } from './envelope';
import { z } from 'zod';
import { batchRecord, envelope, managementError, managementErrors, managementResponse, tokenRecord } from '../../schemas/responses';

/**
 * `/api/token/batch*`: bulk key rollouts run as durable workflows. Starting one answers 202 at once
 * (200 when an Idempotency-Key replays an earlier identical request); progress is read with GET.
 */
export const batchesRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { batches } = deps;
  // The credential is checked before the body is parsed, as on /api/token/.
  const auth = { onRequest: app.requireSystemToken };
  // 202 when a workflow starts, 200 when an Idempotency-Key replays; 409 for a reused key with another body,
  // 503 without a Temporal connection.
  const batchWrite = {
    202: envelope(batchRecord),
    200: envelope(batchRecord),
    ...managementErrors,
    409: managementError,
    503: managementError,
  };

  app.post(
    '/api/token/batch',
    { ...auth, schema: { headers: idempotencyHeaders, body: batchCreateBody, response: batchWrite } },
    async (request, reply) => {
      const { batch, replayed } = await batches.issue(request.account.id, issueInputOf(request.body), {
        idempotencyKey: request.headers['idempotency-key'],
        requestId: request.id,
      });
      return reply.status(replayed ? 200 : 202).send(ok(batch));
    },
  );

  app.get('/api/token/batch', { ...auth, schema: { querystring: paginationQuery, response: managementResponse(envelope(z.array(batchRecord))) } }, async (request, reply) => {
    return okPage(reply, await batches.list(request.account.id, toPage(request.query)));
  });

  app.get('/api/token/batch/:id', { ...auth, schema: { params: batchIdParam, response: managementResponse(envelope(batchRecord)) } }, async (request) => {
    return ok(await batches.get(request.account.id, request.params.id));
  });

  app.get(
    '/api/token/batch/:id/keys',
    { ...auth, schema: { params: batchIdParam, querystring: paginationQuery, response: managementResponse(envelope(z.array(tokenRecord))) } },
    async (request, reply) => {
      return okPage(reply, await batches.keys(request.account.id, request.params.id, toPage(request.query)));
    },
  );

  app.delete('/api/token/batch/:id', { ...auth, schema: { params: batchIdParam, response: managementResponse(envelope(batchRecord)) } }, async (request) => {
    const batch = await batches.cancel(request.account.id, request.params.id, request.id);
    return ok(batch, batch.status === 'running' ? 'cancellation requested; the batch is stopping' : '');
  });

  app.put(
    '/api/token/batch/:id',
    { ...auth, schema: { params: batchIdParam, querystring: batchStatusQuery, headers: idempotencyHeaders, body: batchStatusBody, response: batchWrite } },
    async (request, reply) => {
      if (!request.query.status_only) {
        throw new ValidationError(
          'status_only: must be true: a batch changes only the status of its keys (edit single keys with PUT /api/token/)',
          'status_only',
        );
      }
      const { batch, replayed } = await batches.setStatus(request.account.id, request.params.id, request.body.status, {
        idempotencyKey: request.headers['idempotency-key'],
        requestId: request.id,
      });
      return reply.status(replayed ? 200 : 202).send(ok(batch));
    },
  );

  app.post(
    '/api/token/batch/:id/rotate',
    { ...auth, schema: { params: batchIdParam, headers: idempotencyHeaders, body: batchRotateBody, response: batchWrite } },
    async (request, reply) => {
      const { batch, replayed } = await batches.rotate(request.account.id, request.params.id, request.body.grace_seconds, {
        idempotencyKey: request.headers['idempotency-key'],
        requestId: request.id,
      });
      return reply.status(replayed ? 200 : 202).send(ok(batch));
    },
  );
};
