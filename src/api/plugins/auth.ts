import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Account, SignInContext } from '../../domain/accounts/accounts';
import { authenticateSystemToken } from '../../domain/accounts/accounts';
import { checkCsrf, findConsoleSession } from '../../domain/accounts/console-sessions';
import { ForbiddenError, InvalidApiKeyError } from '../../domain/errors';
import type { ApiKeyPrincipal } from '../../domain/keys/key-auth';
import type { GatewayDeps } from '../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'keyAuth' | 'repos'>;
import { maybeAsyncHook, type RequestHook } from './maybe-async-hook';

declare module 'fastify' {
  interface FastifyRequest {
    account: Account;
    apiKey: ApiKeyPrincipal;
  }
  interface FastifyInstance {
    requireSystemToken: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
    /** The API key's principal on `request.apiKey`, or 401 in the route's family. */
    requireApiKey: RequestHook;
  }
}

/** The web console's session cookie (HttpOnly, SameSite=Strict; src/api/routes/console.ts sets it). */
export const CONSOLE_COOKIE = 'gw_console';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The console session id from the Cookie header, parsed here on demand: @fastify/cookie is registered without its
 * per-request hook, so inference requests (which never carry the cookie) pay nothing for it.
 */
export function consoleSessionId(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header || !header.includes(CONSOLE_COOKIE)) return undefined;
  return request.server.parseCookie(header)[CONSOLE_COOKIE] || undefined;
}

/** The client's address (TRUST_PROXY decides whether X-Forwarded-For is believed) and request id of a sign-in. */
export function signInContext(request: FastifyRequest, via: SignInContext['via']): SignInContext {
  return { address: request.ip, requestId: request.id, via };
}

/** After requireSystemToken: only an account with the operator's role passes (the bootstrap account has it). */
export async function requireAdmin(request: FastifyRequest): Promise<void> {
  if (!request.account?.isAdmin) throw new ForbiddenError('this is the operator\'s view: it needs an account with the admin role');
}

function stripBearer(value: string): string {
  return value.startsWith('Bearer ') || value.startsWith('bearer ') ? value.slice(7).trim() : value.trim();
}

/**
 * API key from `Authorization: Bearer sk-..`, the raw `Authorization: sk-..`, `x-api-key` or `x-goog-api-key`; on the
 * Gemini routes also from `?key=`, as Google's clients send it (the access log never shows a query string).
 */
export function apiKeyFrom(request: FastifyRequest): string {
  const header = request.headers.authorization || request.headers['x-api-key'] || request.headers['x-goog-api-key'];
  if (typeof header === 'string') return stripBearer(header);
  if (request.routeOptions.config?.errorFamily === 'gemini') {
    const key = (request.query as { key?: unknown } | undefined)?.key;
    if (typeof key === 'string') return key.trim();
  }
  return '';
}

export const authPlugin = fp(async (app, opts: { deps: RouteDeps }) => {
  const { keyAuth } = opts.deps;
  app.decorateRequest('account', null as unknown as Account);
  app.decorateRequest('apiKey', null as unknown as ApiKeyPrincipal);

  // The system token in Authorization, or else the console's session cookie: the console calls the same
  // endpoints under the same rules as any client, and its writes must also carry the session's CSRF token.
  app.decorate('requireSystemToken', async (request: FastifyRequest) => {
    const header = request.headers.authorization;
    const sessionId = header === undefined ? consoleSessionId(request) : undefined;
    if (sessionId) {
      const session = await findConsoleSession(opts.deps.repos.accounts, sessionId);
      if (!SAFE_METHODS.has(request.method)) {
        const csrf = request.headers['x-csrf-token'];
        checkCsrf(session, typeof csrf === 'string' ? csrf : undefined);
      }
      request.account = session.account;
      return;
    }
    request.account = await authenticateSystemToken(opts.deps.repos, typeof header === 'string' ? stripBearer(header) : '', signInContext(request, 'api'));
  });

  // A cached key is answered in the same turn; only a key the cache cannot vouch for waits on the database.
  app.decorate('requireApiKey', maybeAsyncHook((request) => {
    const key = apiKeyFrom(request);
    if (!key) throw new InvalidApiKeyError('You did not provide an API key');
    const principal = keyAuth.lookup(key);
    if (!(principal instanceof Promise)) {
      request.apiKey = principal;
      return;
    }
    return principal.then((found) => {
      request.apiKey = found;
    });
  }));
});
