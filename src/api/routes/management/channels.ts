import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { channelHealth } from '../../../domain/relay/channel-health';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'config' | 'engine' | 'repos'>;
import { envelope, managementResponse } from '../../../schemas/responses';
import { ok } from './envelope';
import { requireAdmin } from '../../plugins/auth';

const channelRecord = z.object({
  name: z.string(),
  type: z.string(),
  models: z.array(z.string()),
  priority: z.int(),
  weight: z.number(),
  source: z.enum(['replica', 'tasks_24h']).describe('replica: the last 100 attempts of the answering process; tasks_24h: video tasks finished in 24 h'),
  attempts: z.int(),
  success_rate: z.number().nullable(),
  latency_ms_p50: z.number().nullable(),
  latency_ms_p95: z.number().nullable(),
  consecutive_failures: z.int(),
  cooling_until: z.number().nullable().describe('Unix ms; null when not cooling down'),
  last_attempt_at: z.number().nullable().describe('Unix ms'),
});

/**
 * `GET /api/channel/`: the configured channels and their health (no base URL, no key). The operator's view: the
 * traffic of every account is in it, so other accounts get 403.
 */
export const channelsRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  app.get('/api/channel/', { onRequest: [app.requireSystemToken, requireAdmin], schema: { response: managementResponse(envelope(z.array(channelRecord))) } }, async () => {
    return ok(await channelHealth(deps.repos.usage, deps.config.current().channels, deps.engine.cooldown));
  });
};
