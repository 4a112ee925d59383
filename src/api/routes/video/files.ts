import type { FastifyPluginAsync } from 'fastify';
import { ForbiddenError } from '../../../domain/errors';
import { VIDEO_LINK_PATH_PREFIX } from '../../../domain/video/signed-links';
import type { GatewayDeps } from '../../deps';
import { videoFileResponse } from '../../../schemas/responses';
import { declareFamily } from '../../errors/route-family';
import { sendVideoFile } from './shared';

/**
 * GET /v1/files/video/{task id}?exp=..&sig=..: the result link of a completed task. It takes no credentials (a
 * request that sends Authorization gets 403, as the spec's family B download does), checks the signature and the
 * expiry (403 otherwise) and serves the gateway's copy of the file (Range supported).
 */
export const videoFilesRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  declareFamily(app, 'video-a');
  app.get<{ Params: { taskId: string }; Querystring: Record<string, unknown> }>(`${VIDEO_LINK_PATH_PREFIX}:taskId`, { schema: { response: videoFileResponse } }, async (request, reply) => {
    if (request.headers.authorization !== undefined) throw new ForbiddenError('Result links take no credentials: send the request without Authorization.');
    const check = deps.videoLinks.verifyLink({ taskId: request.params.taskId, exp: request.query.exp, sig: request.query.sig });
    if (!check.ok) throw new ForbiddenError(check.reason === 'expired' ? 'This result link has expired.' : 'This result link is not valid.');
    return sendVideoFile(deps, request, reply, check.taskId);
  });
};
