import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { type BatchRecord, isEnded } from '../../../domain/batches/batch-record';
import { ValidationError } from '../../../domain/errors';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'batchFiles' | 'inferenceBatches'>;
import { inferenceBatchFileParam, inferenceBatchIdParam, inferenceBatchListQuery, inferenceBatchRecord } from '../../../schemas/inference-batch-records';
import { toPage } from '../../../schemas/pagination';
import { batchKeysFileResponse, envelope, managementResponse } from '../../../schemas/responses';
import { ok, okPage } from './envelope';

function recordOf(b: BatchRecord): z.infer<typeof inferenceBatchRecord> {
  const ended = isEnded(b.status);
  return {
    id: b.id,
    api: b.api,
    endpoint: b.endpoint,
    status: b.status,
    token_name: b.tokenName,
    total: b.total,
    succeeded: b.succeeded,
    failed: b.failed,
    canceled: b.canceled,
    expired: b.expired,
    input_tokens: b.usage.input_tokens,
    output_tokens: b.usage.output_tokens,
    has_output: ended && (b.api === 'anthropic' ? b.total > 0 : b.outputFileId !== null),
    has_errors: ended && (b.api === 'anthropic' ? b.failed + b.canceled + b.expired > 0 : b.errorFileId !== null),
    created_at: b.createdAt,
    ended_at: b.endedAt,
    expires_at: b.expiresAt,
  };
}

/**
 * `/api/batches/*`: the account's inference batches of both APIs for the console (progress, counts, cancel, the output
 * and error files), with the system token or the console session.
 */
export const inferenceBatchesRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const auth = { onRequest: app.requireSystemToken };
  const batches = deps.inferenceBatches;

  app.get('/api/batches/', { ...auth, schema: { querystring: inferenceBatchListQuery, response: managementResponse(envelope(z.array(inferenceBatchRecord))) } }, async (request, reply) => {
    const page = await batches.listForAccount(request.account.id, { ...toPage(request.query), status: request.query.status });
    return okPage(reply, { items: page.items.map(recordOf), total: page.total });
  });

  app.get('/api/batches/:id', { ...auth, schema: { params: inferenceBatchIdParam, response: managementResponse(envelope(inferenceBatchRecord)) } }, async (request) =>
    ok(recordOf(await batches.recordOfAccount(request.account.id, request.params.id))),
  );

  app.post('/api/batches/:id/cancel', { ...auth, schema: { params: inferenceBatchIdParam, response: managementResponse(envelope(inferenceBatchRecord)) } }, async (request) => {
    const b = await batches.recordOfAccount(request.account.id, request.params.id);
    await batches.cancel(request.account.id, b.id, b.api);
    return ok(recordOf(await batches.recordOfAccount(request.account.id, b.id)));
  });

  // The output (succeeded lines) or the errors of an ended batch, JSON Lines: OpenAI's files, or Anthropic's results.
  app.get('/api/batches/:id/files/:kind', { ...auth, schema: { params: inferenceBatchFileParam, response: batchKeysFileResponse('application/jsonl', 'the batch output or errors, JSON Lines') } }, async (request, reply) => {
    const accountId = request.account.id;
    const b = await batches.recordOfAccount(accountId, request.params.id);
    if (!isEnded(b.status)) throw new ValidationError(`batch ${b.id} has not ended yet`);
    const name = `${b.id}-${request.params.kind}.jsonl`;
    reply.header('content-type', 'application/jsonl').header('content-disposition', `attachment; filename="${name}"`);
    if (b.api === 'openai') {
      const fileId = request.params.kind === 'output' ? b.outputFileId : b.errorFileId;
      if (!fileId) return reply.send('' as never);
      const { body } = await deps.batchFiles.content(accountId, fileId);
      reply.raw.once('close', () => body.destroy());
      return reply.send(body as never);
    }
    const wantOutput = request.params.kind === 'output';
    const pages = batches.resultLines(accountId, b.id);
    const body = Readable.from(
      (async function* () {
        for await (const page of pages) {
          const lines = page.filter((l) => (l.state === 'succeeded') === wantOutput);
          if (lines.length) yield lines.map((l) => `${JSON.stringify({ custom_id: l.custom_id, state: l.state, result: l.result })}\n`).join('');
        }
      })(),
    );
    reply.raw.once('close', () => body.destroy());
    return reply.send(body as never);
  });
};
