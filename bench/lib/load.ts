import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  connections: number;
  durationSeconds: number;
  headers?: Record<string, string>;
  method?: string;
  body?: string;
  /** A fixed number of requests instead of a duration (work each request leaves behind stays bounded). */
  amount?: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  totalRequests: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodes: Record<string, number>;
}

/** One autocannon run, reduced to the figures the reports quote. */
export function runLoad(opts: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: opts.url,
        connections: opts.connections,
        duration: opts.durationSeconds,
        ...(opts.amount ? { amount: opts.amount } : {}),
        method: opts.method ?? 'GET',
        headers: opts.headers,
        body: opts.body,
        timeout: 10,
      },
      (err, r) => {
        if (err) return reject(err);
        const statusCodes: Record<string, number> = {};
        for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = s.count;
        resolve({
          // autocannon's average is over whole seconds: a counted run that lasts 1.2 s would read as its count.
          requestsPerSecond: opts.amount ? (r.requests.total ?? 0) / r.duration : r.requests.average,
          totalRequests: r.requests.total ?? 0,
          latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: r.latency.mean },
          errors: r.errors,
          timeouts: r.timeouts,
          non2xx: r.non2xx,
          statusCodes,
        });
      },
    );
  });
}
