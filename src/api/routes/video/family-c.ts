import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { orThrow, validateVideoC } from '../../../domain/video/validation';
import { videoCCreated, videoCView } from '../../../domain/video/views';
import type { GatewayDeps } from '../../deps';
import { declareFamily } from '../../errors/route-family';
import { videoCSubmitBody, videoCTaskParam } from '../../../schemas/video-c';
import { videoCResponse, videoCTask } from '../../../schemas/responses';
import { documentOnly, linkOf, originOf, submitOptions } from './shared';

const STATUS_PATH = '/vendorB/v1/api/video/status/';

/** Video family C: POST /vendorB/v1/api/video/submit and GET /vendorB/v1/api/video/status/{taskId}. */
export const videoCRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  declareFamily(app, 'video-c');
  const { videos } = deps;
  const auth = { onRequest: app.requireApiKey, validatorCompiler: documentOnly };
  // A submit counts against the key's rate limits; reading a task does not.
  const submit = { ...auth, onRequest: [app.requireApiKey, app.limitKey] };
  const pollingUrl = (request: FastifyRequest, id: string) => `${originOf(request)}${STATUS_PATH}${encodeURIComponent(id)}`;

  app.post('/vendorB/v1/api/video/submit', { ...submit, schema: { body: videoCSubmitBody, response: videoCResponse(videoCTask) } }, async (request) => {
    const req = orThrow(validateVideoC(request.body));
    const { task } = await videos.submit('C', request.apiKey, { model: req.model, prompt: req.prompt, body: { ...req } }, submitOptions(request, deps.outbound));
    return videoCCreated(task, pollingUrl(request, task.id));
  });

  app.get<{ Params: { taskId: string } }>(`${STATUS_PATH}:taskId`, { ...auth, schema: { params: videoCTaskParam, response: videoCResponse(videoCTask) } }, async (request) => {
    const task = await videos.get(request.apiKey.accountId, request.params.taskId, 'C');
    return videoCView(task, linkOf(deps, request), pollingUrl(request, task.id));
  });
};
