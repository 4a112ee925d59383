import { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import { ForbiddenError, NotFoundError } from '../../../domain/errors';
import { VIDEO_LINK_PATH_PREFIX } from '../../../domain/video/signed-links';
import { videoAssetUrl } from '../../../domain/video/tasks';
import { UpstreamUnavailableError } from '../../../domain/relay/errors';
import { UpstreamError } from '../../../upstream/errors';
import { sendUpstream } from '../../../upstream/http';
import type { GatewayDeps } from '../../deps';
import { videoFileResponse } from '../../schemas/responses';
import { declareFamily } from '../../errors/route-family';

/** Headers of the upstream's file answer that reach the client (never its host, cookies or server details). */
const PASSED = ['content-type', 'content-length', 'content-range', 'accept-ranges', 'last-modified', 'etag'];
const ASSET_TIMEOUT_MS = 30_000;

/**
 * GET /v1/files/video/{task id}?exp=..&sig=..: the result link of a completed task. It takes no credentials (a
 * request that sends Authorization gets 403, as the spec's family B download does), checks the signature and the
 * expiry (403 otherwise) and streams the upstream's file, Range requests passed through.
 */
export const videoFilesRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  declareFamily(app, 'video-a');
  app.get<{ Params: { taskId: string }; Querystring: Record<string, unknown> }>(`${VIDEO_LINK_PATH_PREFIX}:taskId`, { schema: { response: videoFileResponse } }, async (request, reply) => {
    if (request.headers.authorization !== undefined) throw new ForbiddenError('Result links take no credentials: send the request without Authorization.');
    const check = deps.videoLinks.verifyLink({ taskId: request.params.taskId, exp: request.query.exp, sig: request.query.sig });
    if (!check.ok) throw new ForbiddenError(check.reason === 'expired' ? 'This result link has expired.' : 'This result link is not valid.');
    const assetUrl = await videoAssetUrl(deps.db, check.taskId);
    if (!assetUrl) throw new NotFoundError('The video of this link is no longer available.');

    const controller = new AbortController();
    request.raw.on('close', () => controller.abort());
    const range = request.headers.range;
    let upstream;
    try {
      upstream = await sendUpstream({
        url: assetUrl,
        method: 'GET',
        headers: typeof range === 'string' ? { range } : {},
        timeoutMs: ASSET_TIMEOUT_MS,
        signal: controller.signal,
      });
    } catch (err) {
      if (err instanceof UpstreamError) throw new UpstreamUnavailableError(err instanceof UpstreamError && err.kind === 'timeout' ? 'timeout' : 'failed');
      throw err;
    }
    if (upstream.status !== 200 && upstream.status !== 206 && upstream.status !== 416) {
      upstream.destroy();
      throw new UpstreamUnavailableError('failed');
    }
    reply.status(upstream.status);
    for (const name of PASSED) {
      const v = upstream.headers[name];
      if (typeof v === 'string') reply.header(name, v);
    }
    return reply.send(Readable.from(upstream.body));
  });
};
