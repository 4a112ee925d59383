import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { listCalls, sumCalls } from '../../../domain/relay/call-log';
import type { GatewayDeps } from '../../deps';
import { toPage } from '../../schemas/pagination';
import { filtersOf, logFilterQuery, logListQuery } from '../../schemas/logs';
import { ok, okPage } from './envelope';
import { z } from 'zod';
import { callLogEntry, envelope, managementResponse } from '../../schemas/responses';

/** `/api/log/`: the account's billed calls (the ledger), filtered and paged; `/api/log/stat`: their sum. */
export const logsRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const auth = { onRequest: app.requireSystemToken };

  app.get('/api/log/', { ...auth, schema: { querystring: logListQuery, response: managementResponse(envelope(z.array(callLogEntry))) } }, async (request, reply) => {
    return okPage(reply, await listCalls(deps.db, request.account.id, filtersOf(request.query), toPage(request.query)));
  });

  app.get('/api/log/stat', { ...auth, schema: { querystring: logFilterQuery, response: managementResponse(envelope(z.object({ quota: z.int(), count: z.int() }))) } }, async (request) => {
    return ok(await sumCalls(deps.db, request.account.id, filtersOf(request.query)));
  });
};
