import type { FastifyPluginAsync } from 'fastify';
import { declareFamily } from '../errors/route-family';
import type { GatewayDeps } from '../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'probeDatabase' | 'temporal' | 'processGroup'>;
import { healthz, readyz } from '../../schemas/responses';

const PROBE_TIMEOUT_MS = 2000;

async function probe(fn: () => Promise<unknown>, timeoutMs = PROBE_TIMEOUT_MS): Promise<string> {
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

// Probes are outside the spec's families; their (rare) errors use the default OpenAI format.
export const healthRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (app, { deps }) => {
  declareFamily(app, 'openai');
  app.get('/healthz', { schema: { response: { 200: healthz } } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { response: { 200: readyz, 503: readyz } } }, async (_request, reply) => {
    const temporal = deps.temporal;
    const checks = {
      database: await probe(() => deps.probeDatabase()),
      // The gRPC deadline, not only the race in probe(), ends the call: the SDK retries an unreachable
      // server in the background, and a retry outliving the connection would throw when the process stops.
      temporal: temporal
        ? await probe(
            () =>
              temporal.client.connection.withDeadline(Date.now() + PROBE_TIMEOUT_MS, () =>
                temporal.client.workflowService.getSystemInfo({}),
              ),
            PROBE_TIMEOUT_MS + 3000,
          )
        : 'down: not configured',
      // In a process group, ready only when every process of it serves.
      ...(deps.processGroup ? { processes: deps.processGroup.readiness() } : {}),
    };
    const ready = Object.values(checks).every((c) => c === 'ok');
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks });
  });
};
