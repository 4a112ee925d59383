import type { FastifyPluginAsync } from 'fastify';
import type { GatewayDeps } from '../../deps';

// Placeholder: filled in by the billing work.
export const billingRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async () => {};
