import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { rotateSystemToken } from '../../../domain/accounts/accounts';
import type { GatewayDeps } from '../../deps';
import { systemTokenRequestBody } from '../../schemas/accounts';
import { ok } from './envelope';

/** `/api/user/*`: the account itself. */
export const userRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();

  /**
   * The password buys a new system token (spec: "obtained ... after entering the account password");
   * no Authorization header is needed. The previous token stops working at once. As in one-api, `data`
   * is the token string itself.
   */
  app.post('/api/user/token', { schema: { body: systemTokenRequestBody } }, async (request) => {
    const { systemToken } = await rotateSystemToken(deps.db, { ...request.body, requestId: request.id });
    return ok(systemToken);
  });
};
