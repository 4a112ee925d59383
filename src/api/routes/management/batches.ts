import { Readable } from 'node:stream';
import type { TokenRecord } from '../../../domain/keys/token-record';
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
} from '../../../schemas/batches';
import { paginationQuery, toPage } from '../../../schemas/pagination';
import { ok, okPage } from './envelope';
import { z } from 'zod';
import { batchKeysFileResponse, batchRecord, envelope, managementError, managementErrors, managementResponse, tokenRecord } from '../../../schemas/responses';

/**
 * `/api/token/batch*`: bulk key rollouts run as durable workflows. Starting one answers 202 at once
 * (200 when an Idempotency-Key replays an earlier identical request); progress is read with GET.
 */
const CSV_COLUMNS = ['id', 'name', 'key', 'group', 'status', 'remain_quota', 'unlimited_quota', 'expired_time'] as const;

/** A CSV cell: quoted when needed; text is never read as a formula by a spreadsheet (a leading = + - @ is escaped). */
function csvCell(v: unknown): string {
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

async function* keyLines(format: 'csv' | 'jsonl', first: IteratorResult<TokenRecord>, rest: AsyncGenerator<TokenRecord>): AsyncGenerator<string> {
  const line = (t: TokenRecord) => {
    const row = { id: t.id, name: t.name, key: `sk-${t.key}`, group: t.group, status: t.status, remain_quota: t.remain_quota, unlimited_quota: t.unlimited_quota, expired_time: t.expired_time };
    return format === 'csv' ? `${CSV_COLUMNS.map((c) => csvCell(row[c])).join(',')}\n` : `${JSON.stringify(row)}\n`;
  };
  if (format === 'csv') yield `${CSV_COLUMNS.join(',')}\n`;
  if (first.done) return;
  yield line(first.value);
  for await (const t of rest) yield line(t);
}

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

  // The issued keys as a download, streamed a chunk at a time (a million keys are never held in memory). On the
  // untyped instance: the body is a stream, which the documented (string) response type does not describe.
  for (const format of ['csv', 'jsonl'] as const) {
    base.get<{ Params: { id: number } }>(
      `/api/token/batch/:id/keys.${format}`,
      {
        ...auth,
        schema: {
          params: batchIdParam,
          description: `every key of the batch, in issue order, as ${format.toUpperCase()}`,
          response: batchKeysFileResponse(format === 'csv' ? 'text/csv' : 'application/x-ndjson', `the batch's keys, one ${format === 'csv' ? 'CSV row' : 'JSON object per line'} each`),
        },
      },
      async (request, reply) => {
        const rows = batches.streamKeys(request.account.id, request.params.id);
        // The ownership check runs before the first row: a missing batch is an ordinary 404, not a broken stream.
        const first = await rows.next();
        reply.header('content-type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8');
        reply.header('content-disposition', `attachment; filename="batch-${request.params.id}-keys.${format}"`);
        return reply.send(Readable.from(keyLines(format, first, rows)));
      },
    );
  }

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
