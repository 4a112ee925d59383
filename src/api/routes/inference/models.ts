import type { FastifyPluginAsync } from 'fastify';
import type { GatewayDeps } from '../../deps';

// Placeholder: filled in by the models work.
export const modelsRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async () => {};
