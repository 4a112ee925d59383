import multipart from '@fastify/multipart';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ValidationError } from '../../../domain/errors';
import { asMalformedForm, DEFAULT_MULTIPART_LIMIT_BYTES, fieldWithin, readWithin } from '../../multipart-form';
import { VideoNotReadyError } from '../../../domain/video/errors';
import { orThrow, validateVideoA } from '../../../domain/video/validation';
import { videoAContent, videoACreated, videoAView } from '../../../domain/video/views';
import type { GatewayDeps } from '../../deps';
import { declareFamily } from '../../errors/route-family';
import { videoACreateBody, videoAIdParam } from '../../schemas/video-a';
import { videoAResponse, videoATask } from '../../schemas/responses';
import { documentOnly, linkOf, submitOptions } from './shared';

/** A video submit's form: its text fields and at most one file (input_reference). */
const FORM_LIMITS = { files: 1, fields: 16, fieldSize: 64 * 1024, parts: 17 };

/**
 * POST /v1/videos as the official OpenAI clients send it (`client.videos.create`): multipart/form-data with
 * `model`, `prompt`, `seconds`, `size`. Every text field becomes the JSON body's field of that name, so the form and
 * JSON are validated alike. The `input_reference` file (a first frame) is read within the form's byte budget and
 * refused: no family A model of this gateway takes a first frame from a file yet.
 */
async function readVideoForm(request: FastifyRequest, limit: number): Promise<Record<string, string>> {
  const budget = { left: limit };
  const fields: Record<string, string> = {};
  for await (const part of request.parts()) {
    const name = part.fieldname;
    if (part.type === 'file') {
      await readWithin(part.file, budget);
      if (name === 'input_reference') throw new ValidationError('input_reference: a first-frame file is not supported by these models; send model and prompt', name);
      throw new ValidationError(`${name}: unexpected file field`, name);
    }
    const value = fieldWithin(part, budget);
    fields[name] = value;
  }
  return fields;
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
    const body = request.isMultipart() ? await readVideoForm(request, limit).catch((err) => asMalformedForm(err, request)) : request.body;
    const req = orThrow(validateVideoA(body));
    const { task } = await videos.submit('A', request.apiKey, { model: req.model, prompt: req.prompt, body: { ...req } }, submitOptions(request, deps.outbound));
    return videoACreated(task);
  });

  app.get<Id>('/v1/videos/:video_id', { ...auth, schema: { params: videoAIdParam, response: videoAResponse(videoATask) } }, async (request) => {
    return videoAView(await videos.get(request.apiKey.accountId, request.params.video_id, 'A'));
  });

  app.get<Id>('/v1/videos/:video_id/content', { ...auth, schema: { params: videoAIdParam, response: videoAResponse(videoATask) } }, async (request) => {
    const task = await videos.get(request.apiKey.accountId, request.params.video_id, 'A');
    if (task.status !== 'completed') throw new VideoNotReadyError(task.id, task.status);
    return videoAContent(task, linkOf(deps, request));
  });

  app.delete<Id>('/v1/videos/:video_id', { ...auth, schema: { params: videoAIdParam, response: videoAResponse(videoATask) } }, async (request) => {
    return videoAView(await videos.cancel(request.apiKey.accountId, request.params.video_id, 'A'));
  });
};
