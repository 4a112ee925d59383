import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { Family, guessFamily, normalizedPath } from '../../schemas/error-families';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The wire format of this route's errors; set by `declareFamily` in the route's group. */
    errorFamily?: Family;
  }
}

/**
 * Declares the error family of every route registered in this plugin context and its children (a child group
 * may declare another). Call it first in a route group, before its routes.
 */
export function declareFamily(app: FastifyInstance, family: Family): void {
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config ?? {}), errorFamily: family };
  });
}

/**
 * Fails start-up when a route was registered outside any group that declared a family, so a new route group
 * cannot silently answer in a guessed format. Register on the root instance before the route groups.
 */
export function requireDeclaredFamilies(app: FastifyInstance): void {
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    routes.push(route);
  });
  app.addHook('onReady', async () => {
    const missing = routes.filter((r) => !r.config?.errorFamily).map((r) => `${String(r.method)} ${r.url}`);
    if (missing.length) throw new Error(`Routes without a declared error family: ${missing.join(', ')}`);
  });
}

/**
 * The family the matched route declared; a guess from the normalized path when no route matched. The Gemini API's
 * routes under `/v1/models/` serve `{model}:{method}` targets only: any other target there is the OpenAI family's, as
 * the guess says (the same for an error raised before routing and after).
 */
export function familyOf(request: FastifyRequest): Family {
  const declared = request.routeOptions.config?.errorFamily;
  if (declared === 'gemini' && normalizedPath(request.url).startsWith('/v1/')) return guessFamily(request.url);
  return declared ?? guessFamily(request.url);
}
