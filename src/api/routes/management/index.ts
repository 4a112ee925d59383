import type { FastifyPluginAsync } from 'fastify';
import { declareFamily } from '../../errors/route-family';
import type { GatewayDeps } from '../../deps';
import { auditRoutes } from './audit';
import { batchesRoutes } from './batches';
import { inferenceBatchesRoutes } from './inference-batches';
import { channelsRoutes } from './channels';
import { logsRoutes } from './logs';
import { tasksRoutes } from './tasks';
import { tokensRoutes } from './tokens';
import { userRoutes } from './user';

/** `/api/*`: system-token routes answering in the `{success, message, data}` envelope. */
export const managementRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  declareFamily(app, 'management');
  // Balances, keys and the ledger as this process's own calls left them (credit leases, settles after the answer).
  // Only where a route shows them: the barrier gives this process's idle credit leases back, and a console polling a
  // rollout's progress would otherwise make every call of the same keys take its hold again (measured during a
  // rollout: chat p99 157 ms with a barrier on every /api/* call, 21 ms without).
  app.addHook('onRequest', async (request) => {
    if (showsBalances(request.routeOptions.url ?? request.url)) await deps.billing.barrier();
  });
  await app.register(userRoutes, { deps });
  await app.register(tokensRoutes, { deps });
  await app.register(batchesRoutes, { deps });
  await app.register(auditRoutes, { deps });
  await app.register(logsRoutes, { deps });
  await app.register(tasksRoutes, { deps });
  await app.register(inferenceBatchesRoutes, { deps });
  await app.register(channelsRoutes, { deps });
};

/** Routes that show keys' balances, an account's or the ledger: the key records and their downloads, logs, tasks. */
export function showsBalances(route: string): boolean {
  if (route.startsWith('/api/token/batch')) return route.includes('/keys');
  return ['/api/token', '/api/log', '/api/user', '/api/task'].some((prefix) => route.startsWith(prefix));
}
