import type { FastifyPluginAsync } from 'fastify';
import type { GatewayDeps } from '../../deps';

// Placeholder: filled in by the audit work.
export const auditRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async () => {};
