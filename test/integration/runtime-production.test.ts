import { Client, Connection } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { pingWorkflow } from '../../src/workflows';
import { http, TEST_SECRET, testEnv } from '../helpers/harness';
import { exitWithin, GatewayProcess, runGateway, SHARED_DATABASE_BOOTSTRAP_TOKEN } from './runtime-process';

/** The nice value of each thread of a process (Linux /proc: field 19 of each thread's stat). */
function threadNiceValues(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
    // A thread may end between the listing and the read (a worker pool shrinking): skip it.
    let stat: string;
    try { stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'); } catch { return []; }
    return [Number(stat.split(') ')[1].split(' ')[16])];
  });
}

async function stop(p: GatewayProcess) {
  p.child.kill('SIGTERM');
  expect(await exitWithin(p, 20_000)).toEqual({ code: 0, signal: null });
}

/** The environment of one api + worker deployment on the test database and Temporal, on its own task queue. */
function productionSetup() {
  const env = testEnv();
  const taskQueue = `runtime-${randomUUID()}`;
  const bootstrapToken = SHARED_DATABASE_BOOTSTRAP_TOKEN;
  const common = {
    DATABASE_URL: env.databaseUrl,
    TEMPORAL_ADDRESS: env.temporalAddress,
    TEMPORAL_NAMESPACE: env.temporalNamespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    GATEWAY_SECRET: TEST_SECRET,
  };
  return { env, taskQueue, bootstrapToken, common };
}

describe('production entry points: gateway api and gateway worker on a shared database and Temporal', () => {
  it('serves HTTP from `api` and runs workflows in `worker`, each stopping cleanly', async () => {
    const { env, taskQueue, bootstrapToken, common } = productionSetup();

    const worker = runGateway(['worker'], { ...common, WORKER_METRICS_PORT: '0' });
    const api = runGateway(['api'], { ...common, PORT: '0', GATEWAY_BOOTSTRAP_TOKEN: bootstrapToken });

    const baseUrl = (await api.waitFor(/^ {2}Base URL:\s+(\S+)$/m))[1];
    await api.waitFor(/Press Ctrl-C/);
    expect(api.output()).toMatch(/^AI gateway is ready \(api\)$/m);
    expect(api.output()).toContain('System token:  the value of GATEWAY_BOOTSTRAP_TOKEN');
    expect((await http(baseUrl, 'GET', '/readyz')).status).toBe(200);
    expect((await http(baseUrl, 'GET', '/api/token/', { auth: bootstrapToken })).status).toBe(200);
    // The operator's views: the bootstrap account sees channel health; /metrics needs METRICS_TOKEN in production.
    expect((await http(baseUrl, 'GET', '/api/channel/', { auth: bootstrapToken })).status).toBe(200);
    const metrics = await http(baseUrl, 'GET', '/metrics');
    expect([metrics.status, metrics.body.error.message]).toEqual([403, expect.stringContaining('METRICS_TOKEN')]);
    await stop(api);

    await worker.waitFor(/^AI gateway worker is running \(worker\)$/m);
    expect(worker.output()).not.toContain('Base URL');
    // The worker-only process serves its own /metrics (WORKER_METRICS_PORT): its activity and workflow failures.
    const metricsUrl = (await worker.waitFor(/^ {2}Metrics:\s+(\S+)$/m))[1];
    const scraped = await fetch(metricsUrl);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('# TYPE gateway_activity_failures_total counter');
    const connection = await Connection.connect({ address: env.temporalAddress });
    try {
      const result = await new Client({ connection, namespace: env.temporalNamespace }).workflow.execute(pingWorkflow, {
        taskQueue,
        workflowId: `runtime-worker-${randomUUID()}`,
        args: ['worker'],
      });
      expect(result.greeting).toBe('pong worker');
    } finally {
      await connection.close();
    }
    await stop(worker);
  });

  it('a bulk disable run by a separate worker process reaches the api process cache before the batch reads completed', async () => {
    const { bootstrapToken, common } = productionSetup();
    const worker = runGateway(['worker'], common);
    const api = runGateway(['api'], { ...common, PORT: '0', GATEWAY_BOOTSTRAP_TOKEN: bootstrapToken });
    try {
      const baseUrl = (await api.waitFor(/^ {2}Base URL:\s+(\S+)$/m))[1];
      await worker.waitFor(/^AI gateway worker is running/m);
      const finished = async (id: number) => {
        for (let i = 0; i < 300; i++) {
          const res = await http(baseUrl, 'GET', `/api/token/batch/${id}`, { auth: bootstrapToken });
          if (res.body.data.status !== 'running') return res.body.data.status;
          await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error(`batch ${id} still running`);
      };

      const issued = await http(baseUrl, 'POST', '/api/token/batch', {
        auth: bootstrapToken,
        body: { count: 3, name: `prod-${randomUUID().slice(0, 8)}`, unlimited_quota: true },
      });
      expect(issued.status).toBe(202);
      expect(await finished(issued.body.data.id)).toBe('completed');
      const keys = await http(baseUrl, 'GET', `/api/token/batch/${issued.body.data.id}/keys`, { auth: bootstrapToken });
      const key = `sk-${keys.body.data[0].key}`;
      // Warms the api process's key cache.
      expect((await http(baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` })).status).toBe(200);

      const disable = await http(baseUrl, 'PUT', `/api/token/batch/${issued.body.data.id}?status_only=true`, {
        auth: bootstrapToken,
        body: { status: 2 },
      });
      expect(disable.status).toBe(202);
      expect(await finished(disable.body.data.id)).toBe('completed');
      const after = await http(baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` });
      expect(after.status).toBe(401);
      expect(after.body.error.code).toBe('invalid_api_key');
    } finally {
      await stop(api);
      await stop(worker);
    }
  });

  it('an api-only process starts no workflow: the worker process starts the video task it accepted, told by NOTIFY', async () => {
    const { bootstrapToken, common } = productionSetup();
    // The pids are the gateways' own (node itself, no parent in between); the worker at WORKER_NICE, the api not.
    const worker = runGateway(['worker'], { ...common, WORKER_NICE: '7' });
    const api = runGateway(['api'], { ...common, PORT: '0', GATEWAY_BOOTSTRAP_TOKEN: bootstrapToken, WORKER_NICE: '7' });
    try {
      const baseUrl = (await api.waitFor(/^ {2}Base URL:\s+(\S+)$/m))[1];
      await worker.waitFor(/^AI gateway worker is running/m);
      const made = await http(baseUrl, 'POST', '/api/token/', { auth: bootstrapToken, body: { name: `video-${randomUUID().slice(0, 8)}`, unlimited_quota: true } });
      const key = `Bearer sk-${made.body.data.key}`;
      const created = await http(baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1-fast', prompt: 'started by the worker' } });
      expect(created.status).toBe(200);
      let status = '';
      for (let i = 0; i < 300 && status !== 'completed' && status !== 'failed'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = (await http(baseUrl, 'GET', `/v1/videos/${created.body.id}`, { auth: key })).body.status;
      }
      expect(status).toBe('completed');
      // Every thread of the worker (the Temporal core's and libuv's too), none of the api's.
      expect(new Set(threadNiceValues(worker.child.pid!))).toEqual(new Set([7]));
      expect(new Set(threadNiceValues(api.child.pid!))).toEqual(new Set([0]));
    } finally {
      await stop(api);
      await stop(worker);
    }
  }, 60_000);
});
