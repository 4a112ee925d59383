import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { listCalls, sumCalls } from '../../../domain/relay/call-log';
import type { GatewayDeps } from '../../deps';
import { toPage } from '../../schemas/pagination';
import { filtersOf, logFilterQuery, logListQuery } from '../../schemas/logs';
import { ok, okPage } from './envelope';

/** `/api/log/`: the account's billed calls (the ledger), filtered and paged; `/api/log/stat`: their sum. */
export const logsRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const auth = { onRequest: app.requireSystemToken };

  app.get('/api/log/', { ...auth, schema: { querystring: logListQuery } }, async (request, reply) => {
    return okPage(reply, await listCalls(deps.db, request.account.id, filtersOf(request.query), toPage(request.query)));
  });

  app.get('/api/log/stat', { ...auth, schema: { querystring: logFilterQuery } }, async (request) => {
    return ok(await sumCalls(deps.db, request.account.id, filtersOf(request.query)));
  });
};
