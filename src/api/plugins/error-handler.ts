import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { DomainError, NotFoundError } from '../../domain/errors';
import { formatError } from '../../schemas/error-families';
import { familyOf } from '../errors/route-family';
import { toWireError, WireError } from '../../schemas/wire-error';

/** Answers any failure in the wire format of the request's family, always with x-request-id. */
export function sendError(request: FastifyRequest, reply: FastifyReply, failure: unknown, onUnexpected?: (route: string) => void) {
  const wire: WireError = toWireError(failure);
  if (wire.status >= 500) request.log.error({ err: failure }, 'request failed');
  // Not one of the gateway's own refusals nor a framework's: a fault nobody foresaw, ended in this request alone.
  if (wire.status >= 500 && !(failure instanceof DomainError)) onUnexpected?.(request.routeOptions.url ?? 'unrouted');
  if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', request.id);
  if (failure instanceof DomainError && failure.retryAfterSeconds !== undefined) reply.header('retry-after', String(failure.retryAfterSeconds));
  return reply.status(wire.status).send(formatError(familyOf(request), wire, { requestId: request.id }));
}

/** The one error handler: domain and framework errors become the wire format of the route's family. */
export const errorHandlerPlugin = fp(async (app, opts: { onUnexpected?: (route: string) => void }) => {
  app.setErrorHandler((err, request, reply) => sendError(request, reply, err, opts.onUnexpected));
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new NotFoundError(`No route for ${request.method} ${request.url.split('?')[0]}`)),
  );
});
