import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Logger } from 'pino';

export function newRequestId(): string {
  return `req_${randomUUID().replace(/-/g, '')}`;
}

/** The model a request named in its body, if any (family C's status path names one too, but only in its id). */
export function requestedModel(request: FastifyRequest): string | undefined {
  const model = (request.body as { model?: unknown } | undefined)?.model;
  return typeof model === 'string' ? model : undefined;
}

/**
 * x-request-id on every response (404s, errors and SSE included) and one access log line per request: method,
 * route, status, latency, model and the id of the key or account that called (never the key itself).
 */
export const requestIdPlugin = fp<{ accessLog: Logger }>(async (app, { accessLog }) => {
  // Callback hooks, not async ones: no promise per request on the hot path.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // A logger of its own, without the app logger's redaction (which cost more than the rest of the line): the line
  // is made of these fields only, none of them a header or a secret.
  app.addHook('onResponse', (request, reply, done) => {
    accessLog.info(
      {
        request_id: request.id,
        method: request.method,
        url: request.routeOptions.url ?? request.url.split('?')[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        model: requestedModel(request)?.slice(0, 128),
        key_id: request.apiKey?.tokenId,
        account_id: request.apiKey?.accountId ?? request.account?.id,
      },
      'request completed',
    );
    done();
  });
});
