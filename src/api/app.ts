import Fastify, { FastifyInstance, FastifyReply, LogController } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject, validatorCompiler } from 'fastify-type-provider-zod';
import { documentingForms, documentingSerializerCompiler, openApiPlugin } from './plugins/openapi';
import type { GatewayDeps } from './deps';
import fastifyCookie from '@fastify/cookie';
import { authPlugin } from './plugins/auth';
import { keyLimitsPlugin } from './plugins/key-limits';
import { consoleRoutes } from './routes/console';
import { requireDeclaredFamilies } from './errors/route-family';
import { connectionErrorsPlugin, handleClientError, installConnectionErrorHandlers } from './plugins/connection-errors';
import { errorHandlerPlugin, sendError } from './plugins/error-handler';
import { jsonBodyPlugin } from './plugins/json-body';
import { securityHeadersPlugin } from './plugins/security-headers';
import type { JsonShapeLimits } from '../domain/json-shape';
import pino from 'pino';
import { stdoutLogDestination } from './log-destination';
import { lazyRequestLogger } from './request-logger';
import { endUpgradeSocket, requestGuardsPlugin } from './plugins/request-guards';
import { newRequestId, requestIdPlugin } from './plugins/request-id';
import { serverTimingPlugin } from './plugins/server-timing';
import { healthRoutes } from './routes/health';
import { metricsRoutes } from './routes/metrics';
import { metricsPlugin } from './plugins/metrics';
import { inferenceRoutes } from './routes/inference';
import { managementRoutes } from './routes/management';
import { batchRoutes } from './routes/batches';
import { videoRoutes } from './routes/video';

export interface AppOptions {
  logLevel?: string;
  /** Where log lines go; defaults to stdout, buffered (./log-destination). Tests pass a capture stream. */
  logStream?: NodeJS.WritableStream;
  bodyLimitBytes?: number;
  /** Largest multipart body, counted on the bytes read (GATEWAY_MULTIPART_LIMIT_BYTES, default 25 MiB). */
  multipartLimitBytes?: number;
  /** The Responses API over WebSocket (RESPONSES_WEBSOCKET); default on. */
  responsesWebSocket?: boolean;
  /** How long receiving one whole request may take (GATEWAY_REQUEST_TIMEOUT_SECONDS, default 60 s); then 408. */
  requestTimeoutMs?: number;
  /** Most connections held open at once (GATEWAY_MAX_CONNECTIONS, default 10,000). */
  maxConnections?: number;
  /** Nesting depth and elements per array a JSON body may have (GATEWAY_JSON_MAX_DEPTH, GATEWAY_JSON_MAX_ARRAY_LENGTH). */
  jsonLimits?: JsonShapeLimits;
  /**
   * TRUST_PROXY: the proxy addresses (IPs or CIDRs) whose X-Forwarded-Proto / -For are believed: the console cookie is
   * `Secure` behind a TLS-terminating proxy, and request.ip is the client's. Empty (the default): no header is.
   */
  trustProxy?: string[];
  /** METRICS_TOKEN: when set, GET /metrics requires it as a bearer token. */
  metricsToken?: string | null;
  /** Without METRICS_TOKEN, GET /metrics is served to anyone (default, the embedded mode) or refused with 403 (false). */
  metricsOpen?: boolean;
  /** A server span per request (OTEL_EXPORTER_OTLP_ENDPOINT set and tracing started); off by default. */
  tracing?: boolean;
}

/** Headers and fields that may carry key material or tokens; pino replaces them in every line. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-goog-api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers["x-goog-api-key"]',
  'key',
  '*.key',
  'token',
  '*.token',
  'system_token',
  '*.system_token',
];

export async function buildApp(deps: GatewayDeps, opts: AppOptions = {}): Promise<FastifyInstance> {
  const requestTimeoutMs = opts.requestTimeoutMs ?? 60_000;
  const logStream = opts.logStream ?? stdoutLogDestination();
  const logLevel = opts.logLevel ?? 'info';
  const app = Fastify({
    logger: { level: logLevel, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, stream: logStream },
    // `/api/token` and `/api/token/` are the same resource to every client we are compatible with.
    // A stored Response's id wraps the upstream's id with its channel and a signature (about 110 characters and
    // more): the router's default of 100 characters per path parameter would answer such ids 404.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    genReqId: newRequestId,
    requestIdHeader: false,
    // One line per request, written by the request-id plugin once the status is known.
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: opts.bodyLimitBytes ?? 10 * 1024 * 1024,
    // A body that trickles in is cut off: Node checks the deadline every checking interval and answers 408 (in the
    // family's format, through clientErrorHandler). Streamed answers are not bounded by it: it covers receiving only.
    requestTimeout: requestTimeoutMs,
    trustProxy: opts.trustProxy?.length ? opts.trustProxy : false,
    return503OnClosing: true,
    // Errors raised before routing (a malformed percent-encoded URL) still answer in the family's format.
    frameworkErrors: (err, request, reply: FastifyReply) => {
      // No route, so no onResponse hook: an upgrade request answered here ends its socket itself.
      reply.raw.once('finish', () => endUpgradeSocket(request.raw));
      sendError(request, reply, err);
    },
    // Requests Node's parser rejects never reach Fastify; they are answered there, in the family's format too.
    clientErrorHandler: handleClientError,
    // Node answers a missing Host with an empty 400; the request-guards plugin answers it in the family's format.
    http: {
      requireHostHeader: false,
      headersTimeout: Math.min(60_000, requestTimeoutMs),
      connectionsCheckingInterval: Math.min(5_000, Math.max(250, Math.floor(requestTimeoutMs / 4))),
    },
  });
  app.server.maxConnections = opts.maxConnections ?? 10_000;
  installConnectionErrorHandlers(app.server, app.log);
  requireDeclaredFamilies(app);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(documentingSerializerCompiler);

  // The error handler and request id first: a plugin registered before them (the OpenAPI route) would keep
  // Fastify's default error handler.
  // The access line names no header or field the redaction covers: it is written without it (see the plugin).
  await app.register(requestIdPlugin, { accessLog: pino({ level: logLevel }, logStream) });
  await app.register(serverTimingPlugin);
  await app.register(securityHeadersPlugin);
  if (opts.tracing) await app.register((await import('./plugins/tracing')).tracingPlugin);
  await app.register(errorHandlerPlugin, { onUnexpected: (route) => deps.metrics?.unexpectedErrors.inc({ route }) });
  await app.register(openApiPlugin, { transform: documentingForms(jsonSchemaTransform), transformObject: jsonSchemaTransformObject });
  await app.register(connectionErrorsPlugin);
  await app.register(requestGuardsPlugin);
  await app.register(jsonBodyPlugin, { limits: opts.jsonLimits });
  // No per-request hook: the console's cookie is parsed where it is read (plugins/auth.ts).
  await app.register(fastifyCookie, { hook: false });
  await app.register(authPlugin, { deps });
  await app.register(keyLimitsPlugin, { deps });
  await app.register(metricsPlugin, { deps });
  await app.register(healthRoutes, { deps });
  await app.register(metricsRoutes, { deps, token: opts.metricsToken ?? null, open: opts.metricsOpen ?? true });
  await app.register(managementRoutes, { deps });
  await app.register(inferenceRoutes, {
    deps,
    multipartLimitBytes: opts.multipartLimitBytes,
    responsesWebSocket: opts.responsesWebSocket ?? true,
    webSocketMaxBytes: opts.bodyLimitBytes ?? 10 * 1024 * 1024,
    jsonLimits: opts.jsonLimits,
  });
  await app.register(videoRoutes, { deps, multipartLimitBytes: opts.multipartLimitBytes });
  await app.register(batchRoutes, { deps });
  await app.register(consoleRoutes, { deps });
  return app;
}
