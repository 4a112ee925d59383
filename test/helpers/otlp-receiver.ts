import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as an OTLP/HTTP JSON export carries it, attributes flattened to strings. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, string>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
const valueOf = (v: AnyValue) => String(v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue ?? '');

/** An in-process OTLP/HTTP receiver on loopback (POST /v1/traces, JSON), keeping every span and every raw body. */
export async function startOtlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; bodies: string[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      bodies.push(text);
      if (req.url === '/v1/traces') {
        const body = JSON.parse(text) as { resourceSpans: any[] };
        for (const rs of body.resourceSpans ?? []) {
          const service = valueOf((rs.resource?.attributes ?? []).find((a: { key: string }) => a.key === 'service.name')?.value ?? {});
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                kind: s.kind,
                service,
                attributes: Object.fromEntries((s.attributes ?? []).map((a: { key: string; value: AnyValue }) => [a.key, valueOf(a.value)])),
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  // The exporter keeps its connection alive between flushes: a server closing it as idle (Node's 5 s) while an export
  // is being sent on it resets that export. The receiver never closes an idle connection during a test.
  server.keepAliveTimeout = 10 * 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    bodies,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
