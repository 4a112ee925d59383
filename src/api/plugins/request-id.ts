import { randomUUID } from 'node:crypto';
import fp from 'fastify-plugin';

export function newRequestId(): string {
  return `req_${randomUUID().replace(/-/g, '')}`;
}

/** x-request-id on every response (404s, errors and SSE included) and one log line per request. */
export const requestIdPlugin = fp(async (app) => {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      { method: request.method, url: request.routeOptions.url ?? request.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request completed',
    );
  });
});
