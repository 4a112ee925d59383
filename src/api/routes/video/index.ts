import type { FastifyPluginAsync } from 'fastify';
import type { GatewayDeps } from '../../deps';
import { videoARoutes } from './family-a';
import { videoBRoutes } from './family-b';
import { videoCRoutes } from './family-c';
import { videoFilesRoutes } from './files';

/** The three video families (each declares its own error family) and the tasks' result links. */
export const videoRoutes: FastifyPluginAsync<{ deps: GatewayDeps; multipartLimitBytes?: number }> = async (app, { deps, multipartLimitBytes }) => {
  await app.register(videoARoutes, { deps, multipartLimitBytes });
  await app.register(videoBRoutes, { deps });
  await app.register(videoCRoutes, { deps });
  await app.register(videoFilesRoutes, { deps });
};
