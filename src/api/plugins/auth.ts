import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Account } from '../../domain/accounts/accounts';
import { authenticateSystemToken } from '../../domain/accounts/accounts';
import { InvalidApiKeyError } from '../../domain/errors';
import type { ApiKeyPrincipal } from '../../domain/keys/key-auth';
import type { GatewayDeps } from '../deps';

declare module 'fastify' {
  interface FastifyRequest {
    account: Account;
    apiKey: ApiKeyPrincipal;
  }
  interface FastifyInstance {
    requireSystemToken: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
    requireApiKey: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  }
}

function stripBearer(value: string): string {
  return value.startsWith('Bearer ') || value.startsWith('bearer ') ? value.slice(7).trim() : value.trim();
}

/** API key from `Authorization: Bearer sk-..`, the raw `Authorization: sk-..`, or `x-api-key`. */
export function apiKeyFrom(request: FastifyRequest): string {
  const header = request.headers.authorization || request.headers['x-api-key'];
  return typeof header === 'string' ? stripBearer(header) : '';
}

export const authPlugin = fp(async (app, opts: { deps: GatewayDeps }) => {
  const { db, keyAuth } = opts.deps;
  app.decorateRequest('account', null as unknown as Account);
  app.decorateRequest('apiKey', null as unknown as ApiKeyPrincipal);

  app.decorate('requireSystemToken', async (request: FastifyRequest) => {
    const header = request.headers.authorization;
    request.account = await authenticateSystemToken(db, typeof header === 'string' ? stripBearer(header) : '');
  });

  app.decorate('requireApiKey', async (request: FastifyRequest) => {
    const key = apiKeyFrom(request);
    if (!key) throw new InvalidApiKeyError('You did not provide an API key');
    request.apiKey = await keyAuth.authenticate(key);
  });
});
