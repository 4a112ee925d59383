import type { FastifyPluginAsync } from 'fastify';
import { VideoNotReadyError } from '../../../domain/video/errors';
import { orThrow, validateVideoA } from '../../../domain/video/validation';
import { videoAContent, videoACreated, videoAView } from '../../../domain/video/views';
import type { GatewayDeps } from '../../deps';
import { declareFamily } from '../../errors/route-family';
import { videoACreateBody, videoAIdParam } from '../../schemas/video-a';
import { videoAResponse, videoATask } from '../../schemas/responses';
import { documentOnly, linkOf, submitOptions } from './shared';

/** Video family A: POST /v1/videos, GET /v1/videos/{id}, GET /v1/videos/{id}/content, DELETE /v1/videos/{id}. */
export const videoARoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  declareFamily(app, 'video-a');
  const { videos } = deps;
  const auth = { onRequest: app.requireApiKey, validatorCompiler: documentOnly };
  // A submit counts against the key's rate limits; reading a task does not.
  const submit = { ...auth, onRequest: [app.requireApiKey, app.limitKey] };
  type Id = { Params: { video_id: string } };

  app.post('/v1/videos', { ...submit, schema: { body: videoACreateBody, response: videoAResponse(videoATask) } }, async (request) => {
    const req = orThrow(validateVideoA(request.body));
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
