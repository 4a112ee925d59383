import type { FastifyPluginAsync } from 'fastify';
import { declareFamily } from '../../errors/route-family';
import type { GatewayDeps } from '../../deps';
import { auditRoutes } from './audit';
import { batchesRoutes } from './batches';
import { channelsRoutes } from './channels';
import { logsRoutes } from './logs';
import { tasksRoutes } from './tasks';
import { tokensRoutes } from './tokens';
import { userRoutes } from './user';

/** `/api/*`: system-token routes answering in the `{success, message, data}` envelope. */
export const managementRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  declareFamily(app, 'management');
  // Balances, keys and the ledger as this process's own calls left them (credit leases, settles after the answer).
  app.addHook('onRequest', async () => {
    await deps.billing.barrier();
  });
  await app.register(userRoutes, { deps });
  await app.register(tokensRoutes, { deps });
  await app.register(batchesRoutes, { deps });
  await app.register(auditRoutes, { deps });
  await app.register(logsRoutes, { deps });
  await app.register(tasksRoutes, { deps });
  await app.register(channelsRoutes, { deps });
};
