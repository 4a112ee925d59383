import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'repos'>;
import { paginationQuery, toPage } from '../../../schemas/pagination';
import { okPage } from './envelope';
import { z } from 'zod';
import { auditEvent, envelope, managementResponse } from '../../../schemas/responses';

/** `/api/audit/`: the account's management writes, newest first, paged like the key list. */
export const auditRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();

  app.get('/api/audit/', { onRequest: app.requireSystemToken, schema: { querystring: paginationQuery, response: managementResponse(envelope(z.array(auditEvent))) } }, async (request, reply) => {
    return okPage(reply, await deps.repos.audit.list(request.account.id, toPage(request.query)));
  });
};
