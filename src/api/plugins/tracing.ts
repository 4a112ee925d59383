import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { Span } from '@opentelemetry/api';
import { SpanStatusCode } from '@opentelemetry/api';
import { contextWith, runInContext, startServerSpan } from '../../tracing';

declare module 'fastify' {
  interface FastifyRequest {
    traceSpan: Span | null;
  }
}

/**
 * One server span per request (`POST /v1/videos`), registered only when tracing is on. The handler runs in the
 * span's context, so the workflow a request starts and the upstream calls it makes are children of it. The span
 * names the route template, never the URL with its query (signed links carry a signature there).
 */
export const tracingPlugin = fp(async (app) => {
  app.decorateRequest('traceSpan', null);
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    request.traceSpan = startServerSpan(`${request.method} ${route}`, {
      'http.request.method': request.method,
      'http.route': route,
      'gateway.request_id': request.id,
    });
    done();
  });
  // After the body is parsed: everything from here to the handler's last await runs in the request's span.
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.traceSpan) runInContext(contextWith(request.traceSpan), done);
    else done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const span = request.traceSpan;
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}) as FastifyPluginAsync;
