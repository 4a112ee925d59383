import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'repos'>;
import { toPage } from '../../../schemas/pagination';
import { filtersOf, logFilterQuery, logListQuery } from '../../../schemas/logs';
import { ok, okPage } from './envelope';
import { z } from 'zod';
import { callLogEntry, callLogTotals, envelope, managementResponse, tokenDetails } from '../../../schemas/responses';

/** `/api/log/`: the account's billed calls (the ledger), filtered and paged; `/api/log/stat`: their sum. */
export const logsRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const auth = { onRequest: app.requireSystemToken };

  app.get('/api/log/', { ...auth, schema: { querystring: logListQuery, response: managementResponse(envelope(z.array(callLogEntry))) } }, async (request, reply) => {
    return okPage(reply, await deps.repos.usage.calls(request.account.id, filtersOf(request.query), toPage(request.query)));
  });

  app.get('/api/log/stat', { ...auth, schema: { querystring: logFilterQuery, response: managementResponse(envelope(callLogTotals)) } }, async (request) => {
    return ok(await deps.repos.usage.callTotals(request.account.id, filtersOf(request.query)));
  });

  // Per UTC day and model, for the console's usage chart; same filters as /api/log/stat.
  const daily = z.array(
    z.object({
      day: z.string().describe('YYYY-MM-DD (UTC)'),
      model: z.string(),
      quota: z.int(),
      count: z.int(),
      prompt_tokens: z.int(),
      completion_tokens: z.int(),
      ...tokenDetails,
    }),
  );
  app.get('/api/log/stat/daily', { ...auth, schema: { querystring: logFilterQuery, response: managementResponse(envelope(daily)) } }, async (request) => {
    return ok(await deps.repos.usage.byDay(request.account.id, filtersOf(request.query)));
  });
};
