import multipart from '@fastify/multipart';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ValidationError } from '../../../domain/errors';
import { asMalformedForm, DEFAULT_MULTIPART_LIMIT_BYTES, fieldWithin, readWithin } from '../../multipart-form';
import { VideoNotReadyError } from '../../../domain/video/errors';
import { orThrow, sniffImageType, validateInputReference, validateVideoA } from '../../../domain/video/validation';
import type { VideoInputReference } from '../../../upstream/video';
import { videoAContent, videoACreated, videoAView } from '../../../domain/video/views';
import type { GatewayDeps } from '../../deps';
import { declareFamily } from '../../errors/route-family';
import { videoACreateBody, videoAIdParam } from '../../../schemas/video-a';
import { videoAContentResponse, videoAResponse, videoATask } from '../../../schemas/responses';
import { documentOnly, linkOf, sendVideoFile, submitOptions } from './shared';

/** A video submit's form: its text fields and at most one file (input_reference). */
const FORM_LIMITS = { files: 1, fields: 16, fieldSize: 64 * 1024, parts: 17 };

/**
 * POST /v1/videos as the official OpenAI clients send it (`client.videos.create`): multipart/form-data with
 * `model`, `prompt`, `seconds`, `size`. Every text field becomes the JSON body's field of that name, so the form and
 * JSON are validated alike. The `input_reference` file (a first frame) is read within the form's byte budget.
 */
async function readVideoForm(request: FastifyRequest, limit: number): Promise<{ fields: Record<string, string>; input?: VideoInputReference }> {
  const budget = { left: limit };
  const fields: Record<string, string> = {};
  let input: VideoInputReference | undefined;
  for await (const part of request.parts()) {
    const name = part.fieldname;
    if (part.type === 'file') {
      const bytes = await readWithin(part.file, budget);
      if (name !== 'input_reference' || input) throw new ValidationError(`${name}: unexpected file field`, name);
      const declared = part.mimetype.split(';')[0].trim().toLowerCase();
      // Clients that send a reader without a name type it application/octet-stream: its bytes say what it is.
      const contentType = declared === '' || declared === 'application/octet-stream' ? (sniffImageType(bytes) ?? declared) : declared;
      input = { bytes, contentType, filename: part.filename || 'input_reference' };
      continue;
    }
    fields[name] = fieldWithin(part, budget);
  }
  return { fields, input };
}

/**
 * The OpenAI clients' `videos.downloadContent` asks for the bytes (Accept: application/binary; openai-go sends it
 * beside its default application/json); the contract's read, without such a type, is JSON.
 */
function wantsBytes(request: FastifyRequest): boolean {
  return /application\/(binary|octet-stream)|video\//i.test(request.headers.accept ?? '');
}

/** Video family A: POST /v1/videos, GET /v1/videos/{id}, GET /v1/videos/{id}/content, DELETE /v1/videos/{id}. */
export const videoARoutes: FastifyPluginAsync<{ deps: GatewayDeps; multipartLimitBytes?: number }> = async (app, { deps, multipartLimitBytes }) => {
  declareFamily(app, 'video-a');
  const limit = multipartLimitBytes ?? DEFAULT_MULTIPART_LIMIT_BYTES;
  await app.register(multipart, { limits: { ...FORM_LIMITS, fileSize: limit }, throwFileSizeLimit: true });
  const { videos } = deps;
  const auth = { onRequest: app.requireApiKey, validatorCompiler: documentOnly };
  // A submit counts against the key's rate limits; reading a task does not.
  const submit = { ...auth, onRequest: [app.requireApiKey, app.limitKey] };
  type Id = { Params: { video_id: string } };

  // JSON (the contract's form) or multipart/form-data (the OpenAI SDKs').
  app.post('/v1/videos', { ...submit, schema: { body: videoACreateBody, consumes: ['application/json', 'multipart/form-data'], response: videoAResponse(videoATask) } }, async (request) => {
    const form = request.isMultipart() ? await readVideoForm(request, limit).catch((err) => asMalformedForm(err, request)) : null;
    const req = orThrow(validateVideoA(form ? form.fields : request.body));
    if (form?.input) orThrow(validateInputReference(req.model, { contentType: form.input.contentType, bytes: form.input.bytes.length }));
    const { task } = await videos.submit(
      'A',
      request.apiKey,
      { model: req.model, prompt: req.prompt, duration: req.seconds, body: { ...req }, input: form?.input },
      submitOptions(request, deps.outbound),
    );
    return videoACreated(task);
  });

  app.get<Id>('/v1/videos/:video_id', { ...auth, schema: { params: videoAIdParam, response: videoAResponse(videoATask) } }, async (request) => {
    return videoAView(await videos.get(request.apiKey.accountId, request.params.video_id, 'A'));
  });

  app.get<Id & { Querystring: { variant?: unknown } }>('/v1/videos/:video_id/content', { ...auth, schema: { params: videoAIdParam, response: videoAContentResponse } }, async (request, reply) => {
    const task = await videos.get(request.apiKey.accountId, request.params.video_id, 'A');
    if (task.status !== 'completed') throw new VideoNotReadyError(task.id, task.status);
    if (!wantsBytes(request)) return videoAContent(task, linkOf(deps, request));
    const variant = request.query.variant;
    if (variant !== undefined && variant !== 'video') throw new ValidationError(`variant: only video is available, not ${String(variant).slice(0, 40)}`, 'variant');
    return sendVideoFile(deps, request, reply, task.id);
  });

  app.delete<Id>('/v1/videos/:video_id', { ...auth, schema: { params: videoAIdParam, response: videoAResponse(videoATask) } }, async (request) => {
    return videoAView(await videos.cancel(request.apiKey.accountId, request.params.video_id, 'A'));
  });
};
