import { context, type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Resource } from '@opentelemetry/resources';

/**
 * OpenTelemetry traces (issue 9 §2), on only when OTEL_EXPORTER_OTLP_ENDPOINT is set: the SDK and the exporter are
 * loaded then, never otherwise, and every helper here is a plain call-through while tracing is off. One trace runs
 * from the HTTP request (src/api/plugins/tracing.ts) through the Temporal workflow and its activities (Temporal's
 * OpenTelemetry interceptors, src/worker/interceptors.ts) to each upstream call (`upstreamSpan`). Attributes are
 * names, methods, routes and statuses: never a key, a token, a URL's query or an upstream host.
 */
export interface Tracing {
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** Sends the spans still buffered (tests; shutdown). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const TRACER = 'ai-gateway';
let enabled = false;

export function tracingEnabled(): boolean {
  return enabled;
}

/** Starts the SDK: a batching OTLP/HTTP exporter to `<endpoint>/v1/traces`, registered as the global provider. */
export async function startTracing(opts: { endpoint: string; serviceName: string }): Promise<Tracing> {
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { OTLPTraceExporter }, { Resource }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const resource = new Resource({ 'service.name': opts.serviceName });
  const exporter = new OTLPTraceExporter({ url: `${opts.endpoint.replace(/\/+$/, '')}/v1/traces` });
  const spanProcessor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  enabled = true;
  return {
    spanProcessor,
    resource,
    flush: () => provider.forceFlush(),
    async shutdown() {
      enabled = false;
      await provider.shutdown();
    },
  };
}

/** The server span of one HTTP request; null while tracing is off. */
export function startServerSpan(name: string, attributes: Attributes): Span | null {
  if (!enabled) return null;
  return trace.getTracer(TRACER).startSpan(name, { kind: SpanKind.SERVER, attributes }, ROOT_CONTEXT);
}

export function contextWith(span: Span): Context {
  return trace.setSpan(context.active(), span);
}

export function runInContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/** Runs one upstream call in a client span (child of the active span: the request's, or the activity's). */
export async function upstreamSpan<T>(name: string, attributes: Attributes, call: () => Promise<T>): Promise<T> {
  if (!enabled) return call();
  return trace.getTracer(TRACER).startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      const result = await call();
      span.end();
      return result;
    } catch (err) {
      // UpstreamError messages are sanitised (no host, no key); other errors are named by their class only.
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error && err.name === 'UpstreamError' ? err.message : (err as Error)?.name });
      span.end();
      throw err;
    }
  });
}
