import { existsSync } from 'node:fs';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { authenticateSystemToken, signInWithPassword } from '../../domain/accounts/accounts';
import { CONSOLE_SESSION_SECONDS, closeConsoleSession, findConsoleSession, openConsoleSession } from '../../domain/accounts/console-sessions';
import { InvalidSystemTokenError, UnavailableError } from '../../domain/errors';
import { consoleAssetsDir } from '../console-assets';
import type { GatewayDeps } from '../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'repos'>;
import { declareFamily } from '../errors/route-family';
import { CONSOLE_COOKIE, consoleSessionId, signInContext } from '../plugins/auth';
import { consoleSession, consoleSignInBody } from '../../schemas/console';
import { envelope, managementResponse } from '../../schemas/responses';
import { ok } from './management/envelope';
import { z } from 'zod';

function setSessionCookie(request: FastifyRequest, reply: FastifyReply, value: string, maxAge: number): void {
  // Serialized here: @fastify/cookie runs without its hooks (src/api/app.ts), which would otherwise write it.
  reply.header(
    'set-cookie',
    request.server.serializeCookie(CONSOLE_COOKIE, value, { path: '/', httpOnly: true, sameSite: 'strict', secure: request.protocol === 'https', maxAge }),
  );
}

/**
 * The web console: its page and bundle (built by scripts/build.mjs into dist/console) under /console, and its
 * sign-in at /console/session. Signed in, the page calls the public /api/* endpoints with the session cookie.
 */
export const consoleRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  declareFamily(base, 'management');
  const app = base.withTypeProvider<ZodTypeProvider>();
  const session = managementResponse(envelope(consoleSession));

  app.post('/console/session', { schema: { body: consoleSignInBody, response: session } }, async (request, reply) => {
    const body = request.body;
    const account = 'token' in body
      ? await authenticateSystemToken(deps.repos, body.token, signInContext(request, 'console'))
      : await signInWithPassword(deps.repos, body.username, body.password, signInContext(request, 'console'));
    const { sessionId, csrf } = await openConsoleSession(deps.repos.accounts, account);
    await deps.repos.audit.record({ accountId: account.id, action: 'console.sign_in', targetType: 'account', targetId: account.id, requestId: request.id });
    setSessionCookie(request, reply, sessionId, CONSOLE_SESSION_SECONDS);
    return ok({ username: account.username, csrf_token: csrf, is_admin: account.isAdmin });
  });

  // `data: null` when not signed in (not a 401): the page asks on every load, and a browser logs each 401 as an error.
  app.get('/console/session', { schema: { response: managementResponse(envelope(consoleSession.nullable())) } }, async (request) => {
    const id = consoleSessionId(request);
    const found = id
      ? await findConsoleSession(deps.repos.accounts, id).catch((err: unknown) => {
        if (err instanceof InvalidSystemTokenError) return null;
        throw err;
      })
      : null;
    return ok(found && { username: found.account.username, csrf_token: found.csrf, is_admin: found.account.isAdmin });
  });

  app.delete('/console/session', { schema: { response: managementResponse(envelope(z.null())) } }, async (request, reply) => {
    const id = consoleSessionId(request);
    if (id) await closeConsoleSession(deps.repos.accounts, id);
    setSessionCookie(request, reply, '', 0);
    return ok(null);
  });

  const root = consoleAssetsDir();
  const built = existsSync(`${root}/index.html`);
  if (built) {
    await app.register(fastifyStatic, { root, prefix: '/console/assets/', index: false, wildcard: true, decorateReply: true });
  }
  const page = async (_request: FastifyRequest, reply: FastifyReply) => {
    if (!built) throw new UnavailableError('the console is not built: run `npm run build` (npm start does it)');
    reply.header('cache-control', 'no-store');
    reply.header('content-security-policy', "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
    // Without cacheControl: false, @fastify/static replaces no-store with `public, max-age=0`.
    return reply.sendFile('index.html', root, { cacheControl: false });
  };
  app.get('/console', { schema: { hide: true } }, page);
};
