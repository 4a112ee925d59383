import type { FastifyPluginAsync } from 'fastify';
import type { GatewayDeps } from '../../deps';

// Placeholder: filled in by the batches work.
export const batchesRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async () => {};
