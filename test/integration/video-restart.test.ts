import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startSimulator, type Simulator } from '../../src/simulator';
import { http } from '../helpers/harness';
import { ISSUE_VIDEO_YAML, VIDEO_KEY } from '../helpers/video-config';
import { waitFor } from '../helpers/wait';
import { exitWithin, type GatewayProcess, removeTempDataDirs, runGateway, tempDataDir } from './runtime-process';

/**
 * Issue 8 §6, second half: the whole `npm start` process group (api, worker, embedded database and Temporal dev
 * server) is SIGKILLed while video tasks poll; a restart on the same DATA_DIR finishes every task, billed once.
 * The upstream is a simulator of this test, so it keeps its tasks across the gateway's death.
 */
describe('chaos: npm start is killed with its whole process group and restarted', () => {
  let sim: Simulator;
  const procs: GatewayProcess[] = [];
  const token = 'video-restart-bootstrap-token-0123456789';

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: VIDEO_KEY, videoGenerationMs: 12_000, maxRecords: 0 });
  });
  afterAll(async () => {
    for (const p of procs) {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        try {
          process.kill(-p.child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    await sim?.close();
    removeTempDataDirs();
  });

  it('every task completes once after the restart; the ledger and used_quota agree', async () => {
    const dataDir = tempDataDir();
    const configFile = path.join(dataDir, '..', `${path.basename(dataDir)}.yaml`);
    writeFileSync(configFile, ISSUE_VIDEO_YAML.split('http://127.0.0.1:9100').join(sim.url));
    const env = { DATA_DIR: dataDir, GATEWAY_CONFIG: configFile, VIDEO_KEY, PORT: '0', GATEWAY_BOOTSTRAP_TOKEN: token };
    const start = async () => {
      const p = runGateway(['start'], env, { detached: true });
      procs.push(p);
      const baseUrl = (await p.waitFor(/^ {2}Base URL:\s+(\S+)$/m, 90_000))[1];
      await p.waitFor(/Press Ctrl-C/, 90_000);
      return { p, baseUrl };
    };

    const first = await start();
    const apiKey = (await first.p.waitFor(/^ {2}API key:\s+(sk-\S+)$/m))[1];
    const submitted: Array<{ path: (id: string) => string; id: string; done: (b: any) => boolean }> = [];
    for (let i = 0; i < 2; i++) {
      const a = await http(first.baseUrl, 'POST', '/v1/videos', { auth: apiKey, body: { model: 'video-3.1', prompt: `restart a${i}` } });
      expect(a.status).toBe(200);
      submitted.push({ id: a.body.id, path: (id) => `/v1/videos/${id}`, done: (b) => b.status === 'completed' || b.status === 'failed' });
      const b = await http(first.baseUrl, 'POST', '/vendorA/api/v1/services/aigc/video-generation/video-synthesis', {
        auth: `Bearer ${apiKey}`,
        headers: { 'x-vendor-async': 'enable' },
        body: { model: 'vendorC-1.0-r2v', input: { prompt: `restart b${i}`, media: [{ type: 'reference_image', url: 'https://example.com/i.png' }] } },
      });
      expect(b.status).toBe(200);
      submitted.push({ id: b.body.output.task_id, path: (id) => `/v1/tasks/${id}`, done: (x) => x.status === 'completed' || x.status === 'failed' });
      const c = await http(first.baseUrl, 'POST', '/vendorB/v1/api/video/submit', { auth: `Bearer ${apiKey}`, body: { prompt: `restart c${i}`, model: 'video3-pro' } });
      expect(c.status).toBe(200);
      submitted.push({ id: c.body.data.taskId, path: (id) => `/vendorB/v1/api/video/status/${encodeURIComponent(id)}`, done: (x) => x.data.status !== 'processing' });
    }
    // Mid-generation (12 s), after the first poll of every task that polls before then (families A and C poll first
    // at 5 s, B at 10 s), its progress written: kill the whole group, no clean-up of any kind.
    const before = await waitFor(
      async () => {
        const res = await http(first.baseUrl, 'GET', '/api/task/?page_size=100', { auth: token });
        const tasks: Array<{ family: string; progress: number }> = res.body.data;
        return tasks.length === 6 && tasks.filter((t) => t.family !== 'B').every((t) => t.progress > 0) && res;
      },
      { timeoutMs: 10_000, intervalMs: 200, message: 'a written poll of every family A and C task' },
    );
    expect(before.body.data).toHaveLength(6);
    expect(before.body.data.every((t: { status: string }) => t.status === 'queued' || t.status === 'processing')).toBe(true);
    process.kill(-first.p.child.pid!, 'SIGKILL');
    await first.p.exited;

    const second = await start();
    const auth = (path: string) => (path.startsWith('/v1/videos') ? apiKey : `Bearer ${apiKey}`);
    for (const t of submitted) {
      const url = t.path(t.id);
      for (let i = 0; ; i++) {
        const res = await http(second.baseUrl, 'GET', url, { auth: auth(url) });
        if (res.status === 200 && t.done(res.body)) break;
        if (i > 900) throw new Error(`${url} did not finish: ${res.status} ${JSON.stringify(res.body)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const tasks = (await http(second.baseUrl, 'GET', '/api/task/?page_size=100', { auth: token })).body.data;
    expect(tasks.map((t: { status: string }) => t.status)).toEqual(Array(6).fill('completed'));
    const log = (await http(second.baseUrl, 'GET', '/api/log/?page_size=100', { auth: token })).body.data;
    expect(log.map((r: { request_id: string }) => r.request_id).sort()).toEqual(tasks.map((t: { request_id: string }) => t.request_id).sort());
    for (const t of tasks) expect(log.find((r: { request_id: string }) => r.request_id === t.request_id).quota).toBe(t.quota);
    const sum = log.reduce((s: number, r: { quota: number }) => s + r.quota, 0);
    const keys = (await http(second.baseUrl, 'GET', '/api/token/?page_size=100', { auth: token })).body.data;
    expect(keys.find((k: { name: string }) => k.name === 'bootstrap').used_quota).toBe(sum);

    second.p.child.kill('SIGTERM');
    expect(await exitWithin(second.p, 30_000)).toEqual({ code: 0, signal: null });
  }, 240_000);
});
