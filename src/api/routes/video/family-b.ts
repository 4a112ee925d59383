import type { FastifyPluginAsync } from 'fastify';
import { ValidationError } from '../../../domain/errors';
import { orThrow, validateVideoB } from '../../../domain/video/validation';
import { videoBCreated, videoBView } from '../../../domain/video/views';
import type { GatewayDeps } from '../../deps';
import { declareFamily } from '../../errors/route-family';
import { videoBCreateBody, videoBTaskParam } from '../../../schemas/video-b';
import { videoBResponse, videoBSubmitted, videoBTask } from '../../../schemas/responses';
import { documentOnly, linkOf, submitOptions } from './shared';

export const VIDEO_B_SUBMIT_PATH = '/vendorA/api/v1/services/aigc/video-generation/video-synthesis';

/** Video family B: submit (X-Vendor-Async: enable required) and GET /v1/tasks/{task_id}. */
export const videoBRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  declareFamily(app, 'video-b');
  const { videos } = deps;
  const auth = { onRequest: app.requireApiKey, validatorCompiler: documentOnly };
  // A submit counts against the key's rate limits; reading a task does not.
  const submit = { ...auth, onRequest: [app.requireApiKey, app.limitKey] };

  app.post(VIDEO_B_SUBMIT_PATH, { ...submit, schema: { body: videoBCreateBody, response: videoBResponse(videoBSubmitted) } }, async (request) => {
    if (request.headers['x-vendor-async'] !== 'enable') {
      throw new ValidationError("X-Vendor-Async: must be 'enable' (this API is asynchronous only)", 'x-vendor-async');
    }
    const req = orThrow(validateVideoB(request.body));
    const { task } = await videos.submit(
      'B',
      request.apiKey,
      { model: req.model, prompt: req.input.prompt, duration: req.parameters.duration, body: { model: req.model, input: req.input, parameters: req.parameters } },
      submitOptions(request, deps.outbound),
    );
    return videoBCreated(task);
  });

  app.get<{ Params: { task_id: string } }>('/v1/tasks/:task_id', { ...auth, schema: { params: videoBTaskParam, response: videoBResponse(videoBTask) } }, async (request) => {
    return videoBView(await videos.get(request.apiKey.accountId, request.params.task_id, 'B'), linkOf(deps, request));
  });
};
