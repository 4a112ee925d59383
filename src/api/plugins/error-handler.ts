import fp from 'fastify-plugin';
import { familyOf, formatError } from '../errors/families';
import { toWireError } from '../errors/wire-error';

/** The one error handler: domain and framework errors become the wire format of the route's family. */
export const errorHandlerPlugin = fp(async (app) => {
  app.setErrorHandler((err, request, reply) => {
    const wire = toWireError(err);
    if (wire.status >= 500) request.log.error({ err }, 'request failed');
    if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', request.id);
    return reply.status(wire.status).send(formatError(familyOf(request.url), wire));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const wire = { status: 404, code: 'not_found', message: `No route for ${request.method} ${path}`, param: null };
    return reply.status(404).send(formatError(familyOf(request.url), wire));
  });
});
