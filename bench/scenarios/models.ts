import { runLoad } from '../lib/load';
import type { Scenario } from '../lib/types';

const TARGET_RPS = 5000;
const TARGET_P99_MS = 10;

/**
 * The hot path: GET /v1/models with `Authorization: Bearer sk-...` from many connections. Every request
 * authenticates (cache hit), looks up the pre-serialized list for the key's (group, allowlist), writes
 * one log line and answers with x-request-id.
 */
export const modelsScenario: Scenario = {
  name: 'models',
  title: 'GET /v1/models with an API key',
  async run(ctx) {
    const { key } = await ctx.newApiKey({ name: 'bench-models', unlimited_quota: true });
    const headers = { authorization: `Bearer ${key}` };
    const url = `${ctx.baseUrl}/v1/models`;

    const probe = await fetch(url, { headers });
    const body = (await probe.json()) as { data?: unknown[] };
    if (probe.status !== 200 || !Array.isArray(body.data) || body.data.length === 0) {
      throw new Error(`GET /v1/models answered ${probe.status} with ${JSON.stringify(body).slice(0, 200)}`);
    }
    if (!probe.headers.get('x-request-id')) throw new Error('GET /v1/models answered without x-request-id');
    const bytes = JSON.stringify(body).length;

    const { connections, durationSeconds, warmupSeconds } = ctx.options;
    ctx.log(`models: warming up ${warmupSeconds} s`);
    await runLoad({ url, connections, durationSeconds: warmupSeconds, headers });
    ctx.log(`models: measuring ${durationSeconds} s with ${connections} connections`);
    const load = await runLoad({ url, connections, durationSeconds, headers });

    const met = load.requestsPerSecond >= TARGET_RPS && load.latencyMs.p99 < TARGET_P99_MS && load.errors === 0 && load.non2xx === 0;
    return {
      load,
      figures: [
        ['Connections', String(connections)],
        ['Duration', `${durationSeconds} s (after ${warmupSeconds} s warm-up)`],
        ['Response', `${body.data.length} models, ${bytes} bytes`],
        ['Requests/s (mean)', load.requestsPerSecond.toFixed(0)],
        ['Requests total', String(load.totalRequests)],
        ['Latency p50', `${load.latencyMs.p50} ms`],
        ['Latency p90', `${load.latencyMs.p90} ms`],
        ['Latency p99', `${load.latencyMs.p99} ms`],
        ['Latency max', `${load.latencyMs.max} ms`],
        ['Latency mean', `${load.latencyMs.mean} ms`],
        ['Errors / timeouts', `${load.errors} / ${load.timeouts}`],
        ['Non-2xx', String(load.non2xx)],
      ],
      target: { description: `>= ${TARGET_RPS} req/s with p99 < ${TARGET_P99_MS} ms, no errors`, met },
    };
  },
};
