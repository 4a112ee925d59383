import multipart from '@fastify/multipart';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { StagedFile } from '../../../domain/batches/files';
import { fileView } from '../../../domain/batches/files';
import { ValidationError } from '../../../domain/errors';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'batchFiles'>;
import { declareFamily } from '../../errors/route-family';
import { asMalformedForm, fieldWithin } from '../../multipart-form';
import { fileIdParams, fileListQuery } from '../../../schemas/inference-batches';
import { fileUploadForm } from '../../../schemas/forms';
import { fileContentResponse, fileDeleted, fileList, fileObject, openAi } from '../../../schemas/batch-responses';

/** Room for a form's boundaries and fields around the largest input file. */
const FORM_OVERHEAD = 1024 * 1024;

/**
 * The Files API (files of purpose `batch`, and the output files batches write): POST /v1/files, GET /v1/files,
 * GET /v1/files/{id}, GET /v1/files/{id}/content, DELETE /v1/files/{id}. An upload is stored as it arrives and
 * counted on the bytes read: past 200 MB or 50,000 lines it is a 413 and nothing is kept.
 */
export const fileRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  declareFamily(base, 'openai');
  const app = base.withTypeProvider<ZodTypeProvider>();
  const files = deps.batchFiles;
  await app.register(multipart, { limits: { fileSize: files.maxBytes + 1, files: 1, fields: 10, fieldSize: 1024 }, throwFileSizeLimit: true });

  app.post('/v1/files', { onRequest: app.requireApiKey, bodyLimit: files.maxBytes + FORM_OVERHEAD, schema: { consumes: ['multipart/form-data'], form: fileUploadForm, response: openAi(fileObject) } }, async (request, reply) => {
    if (!request.isMultipart()) throw new ValidationError('body: must be multipart/form-data with a file and a purpose', 'file');
    const budget = { left: FORM_OVERHEAD };
    let purpose: string | undefined;
    let staged: StagedFile | undefined;
    try {
      for await (const part of request.parts()) {
        if (part.type === 'file') {
          if (part.fieldname !== 'file' || staged) throw new ValidationError(`${part.fieldname}: unexpected file field`, part.fieldname);
          staged = await files.stage({ filename: part.filename, stream: part.file });
          continue;
        }
        const value = fieldWithin(part, budget);
        if (part.fieldname === 'purpose') purpose = value;
      }
    } catch (err) {
      if (staged) await files.discard(staged);
      asMalformedForm(err, request);
    }
    if (!staged) throw new ValidationError('file: is required', 'file');
    const row = await files.commit(request.apiKey.accountId, staged, purpose);
    return reply.send(fileView(row));
  });

  app.get('/v1/files', { onRequest: app.requireApiKey, schema: { querystring: fileListQuery, response: openAi(fileList) } }, async (request) =>
    files.list(request.apiKey.accountId, request.query),
  );

  app.get('/v1/files/:file_id', { onRequest: app.requireApiKey, schema: { params: fileIdParams, response: openAi(fileObject) } }, async (request) =>
    fileView(await files.get(request.apiKey.accountId, request.params.file_id)),
  );

  app.get('/v1/files/:file_id/content', { onRequest: app.requireApiKey, schema: { params: fileIdParams, response: fileContentResponse } }, async (request, reply) => {
    const { file, body } = await files.content(request.apiKey.accountId, request.params.file_id);
    reply.raw.once('close', () => body.destroy());
    return reply.header('content-type', 'application/jsonl').header('content-length', String(file.bytes)).send(body as never);
  });

  app.delete('/v1/files/:file_id', { onRequest: app.requireApiKey, schema: { params: fileIdParams, response: openAi(fileDeleted) } }, async (request) =>
    files.remove(request.apiKey.accountId, request.params.file_id),
  );
};
