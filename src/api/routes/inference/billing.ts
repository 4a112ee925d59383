import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { getKeyBalance } from '../../../domain/billing/balance';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'repos'>;
import { billingSubscription, billingUsage, openAiResponse } from '../../../schemas/responses';

/**
 * OpenAI-compatible balance reads, as one-api/new-api answer them, for the calling key. Read fresh from
 * the database on every call (never from the authentication cache). Also served without the /v1 prefix.
 */
export const billingRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (app, { deps }) => {
  const subscription = async (request: FastifyRequest, _reply: FastifyReply) => {
    const b = await getKeyBalance(deps.repos.keys, request.apiKey.tokenId);
    return {
      object: 'billing_subscription',
      has_payment_method: true,
      soft_limit_usd: b.limitUsd,
      hard_limit_usd: b.limitUsd,
      system_hard_limit_usd: b.limitUsd,
      access_until: b.accessUntil,
    };
  };

  const usage = async (request: FastifyRequest, _reply: FastifyReply) => {
    const b = await getKeyBalance(deps.repos.keys, request.apiKey.tokenId);
    // OpenAI reports usage in cents.
    return { object: 'list', total_usage: b.usedUsd * 100 };
  };

  for (const prefix of ['/v1', '']) {
    app.get(`${prefix}/dashboard/billing/subscription`, { onRequest: app.requireApiKey, schema: { response: openAiResponse(billingSubscription) } }, subscription);
    app.get(`${prefix}/dashboard/billing/usage`, { onRequest: app.requireApiKey, schema: { response: openAiResponse(billingUsage) } }, usage);
  }
};
