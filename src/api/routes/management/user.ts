import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { changePassword, rotateSystemToken } from '../../../domain/accounts/accounts';
import { signInContext } from '../../plugins/auth';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'cipher' | 'repos'>;
import { passwordChangeBody, systemTokenRequestBody } from '../../../schemas/accounts';
import { ok } from './envelope';
import { rotateWebhookSecret, webhookSecretOf } from '../../../domain/webhooks/secrets';
import { z } from 'zod';
import { envelope, managementResponse } from '../../../schemas/responses';

/** `/api/user/*`: the account itself. */
export const userRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();

  /**
   * The password buys a new system token (spec: "obtained ... after entering the account password");
   * no Authorization header is needed. The previous token stops working at once. As in one-api, `data`
   * is the token string itself.
   */
  app.post('/api/user/token', { schema: { body: systemTokenRequestBody, response: managementResponse(envelope(z.string().describe('the new system token'))) } }, async (request) => {
    const { systemToken } = await rotateSystemToken(deps.repos, request.body, signInContext(request, 'api'));
    return ok(systemToken);
  });

  /**
   * A new password for an account that proves it knows the current one (throttled like a sign-in; no Authorization
   * needed, as for a new system token). Every console session of the account ends; the system token stays.
   */
  app.put('/api/user/password', { schema: { body: passwordChangeBody, response: managementResponse(envelope(z.null())) } }, async (request) => {
    const b = request.body;
    await changePassword(deps.repos, { username: b.username, currentPassword: b.password, newPassword: b.new_password }, signInContext(request, 'api'));
    return ok(null);
  });

  // The account's webhook signing secret (Standard Webhooks `whsec_...`), made on first read; stored encrypted.
  const secretResponse = { response: managementResponse(envelope(z.object({ secret: z.string().describe('whsec_...') }))) };
  app.get('/api/user/webhook-secret', { onRequest: app.requireSystemToken, schema: secretResponse }, async (request) => {
    return ok({ secret: await webhookSecretOf(deps.repos.webhooks, deps.cipher, request.account.id) });
  });

  app.post('/api/user/webhook-secret/rotate', { onRequest: app.requireSystemToken, schema: secretResponse }, async (request) => {
    const secret = await rotateWebhookSecret(deps.repos.webhooks, deps.cipher, request.account.id);
    await deps.repos.audit.record({ accountId: request.account.id, action: 'webhook_secret.rotate', targetType: 'account', targetId: String(request.account.id), requestId: request.id });
    return ok({ secret });
  });
};
