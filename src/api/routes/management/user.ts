import type { FastifyPluginAsync } from 'fastify';
import type { GatewayDeps } from '../../deps';

// Placeholder: filled in by the user work.
export const userRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async () => {};
