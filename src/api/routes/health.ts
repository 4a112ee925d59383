import type { FastifyPluginAsync } from 'fastify';
import type { GatewayDeps } from '../deps';

async function probe(fn: () => Promise<unknown>, timeoutMs = 2000): Promise<string> {
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), timeoutMs).unref()),
    ]);
    return 'ok';
  } catch (err) {
    return `down: ${(err as Error).message}`;
  }
}

export const healthRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const temporal = deps.temporal;
    const checks = {
      database: await probe(() => deps.db.query('SELECT 1')),
      temporal: temporal
        ? await probe(() => temporal.client.workflowService.getSystemInfo({}))
        : 'down: not configured',
    };
    const ready = Object.values(checks).every((c) => c === 'ok');
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks });
  });
};
