import type { FastifyPluginAsync } from 'fastify';
import type { GatewayDeps } from '../../deps';

// Placeholder: filled in by the tokens work.
export const tokensRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async () => {};
