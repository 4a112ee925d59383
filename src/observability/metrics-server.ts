import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { metricsAuthorized } from './metrics';


/**
 * `GET /metrics` of a worker-only process (WORKER_METRICS_PORT), which has no HTTP api of its own: its activity and
 * workflow failure counts. METRICS_TOKEN guards it as it guards the api's.
 */
export async function startMetricsServer(
  registry: Registry,
  opts: { port: number; host: string; token?: string | null },
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    if (!metricsAuthorized(req.headers.authorization, opts.token)) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('unauthorized\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const host = a.address.includes(':') ? `[${a.address}]` : a.address;
  return { url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${a.port}/metrics`, close: () => new Promise((r) => server.close(() => r())) };
}
