import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { http, startGateway, type TestGateway } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { FAST_POLLS, ISSUE_VIDEO_YAML, VIDEO_KEY } from '../helpers/video-config';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process';

/**
 * Issue 8 §6: 20 tasks polling, the worker process SIGKILLed, a new worker finishes every one; each completed
 * task billed exactly once and the ledger sum equal to the key's used_quota.
 */
describe('chaos: the video worker is killed while tasks poll', () => {
  let sim: Simulator;
  let gw: TestGateway;
  let dir: string;
  let configFile: string;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: VIDEO_KEY, videoGenerationMs: 5000, maxRecords: 0 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'video-chaos-'));
    configFile = path.join(dir, 'gateway.yaml');
    writeFileSync(configFile, ISSUE_VIDEO_YAML.split('http://127.0.0.1:9100').join(sim.url));
    gw = await startGateway({
      taskQueue: `video-chaos-${randomUUID()}`,
      config: ConfigStore.fromFile(configFile, { VIDEO_KEY }),
      // A poll lost with the killed worker is tried again after 3 s.
      video: { pollMs: FAST_POLLS, deadlineSeconds: 120, upstreamAttemptMs: 3000 },
    });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill('SIGKILL');
    await gw?.close();
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const spawn = async () => {
    const w = await spawnWorkerProcess({ taskQueue: gw.taskQueue, env: { WORKER_GATEWAY_CONFIG: configFile, VIDEO_KEY } });
    workers.push(w);
    return w;
  };

  it('SIGKILL mid-poll; a new worker brings all 20 to a terminal state, billed exactly once', async () => {
    const first = await spawn();
    const { key, record } = await newKey(gw);
    const submits = Array.from({ length: 20 }, (_, i) => {
      const prompt = i % 5 === 4 ? `clip ${i} will fail` : `clip ${i}`;
      if (i % 3 === 0) return http(gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1-fast', prompt } }).then((r) => r.body.id as string);
      if (i % 3 === 1) {
        return http(gw.baseUrl, 'POST', '/vendorA/api/v1/services/aigc/video-generation/video-synthesis', {
          auth: `Bearer ${key}`,
          headers: { 'x-vendor-async': 'enable' },
          body: { model: 'vendorA-2.7-r2v', input: { prompt }, parameters: { duration: 3 } },
        }).then((r) => r.body.output.task_id as string);
      }
      return http(gw.baseUrl, 'POST', '/vendorB/v1/api/video/submit', { auth: `Bearer ${key}`, body: { prompt } }).then((r) => r.body.data.taskId as string);
    });
    const ids = await Promise.all(submits);
    expect(new Set(ids).size).toBe(20);

    // Every task submitted upstream and polling, none finished: kill the worker there.
    const states = async () => (await gw.db.query('SELECT status, upstream_id FROM video_tasks WHERE id = ANY($1)', [ids])).rows;
    for (let i = 0; ; i++) {
      const rows = await states();
      if (rows.every((r) => r.upstream_id) && rows.some((r) => r.status === 'processing')) break;
      if (i > 200) throw new Error(`tasks did not start polling: ${JSON.stringify(rows)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await states()).every((r) => r.status === 'queued' || r.status === 'processing')).toBe(true);
    await first.kill('SIGKILL');
    await spawn();

    for (let i = 0; ; i++) {
      const rows = await states();
      if (rows.every((r) => r.status === 'completed' || r.status === 'failed')) break;
      if (i > 600) throw new Error(`tasks did not finish: ${JSON.stringify(rows)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const tasks = (await gw.db.query('SELECT id, status, quota::int AS quota FROM video_tasks WHERE id = ANY($1)', [ids])).rows;
    const completed = tasks.filter((t) => t.status === 'completed');
    expect(completed).toHaveLength(16);
    const ledger = (await gw.db.query('SELECT task_id, quota::int AS quota FROM ledger WHERE task_id = ANY($1)', [ids])).rows;
    expect(ledger.map((r) => r.task_id).sort()).toEqual(completed.map((t) => t.id).sort());
    for (const t of completed) expect(ledger.find((r) => r.task_id === t.id)!.quota).toBe(t.quota);
    const sum = ledger.reduce((s, r) => s + r.quota, 0);
    const used = (await gw.db.query('SELECT used_quota::int AS used FROM tokens WHERE id = $1', [record.id])).rows[0].used;
    expect(used).toBe(sum);
    const holds = (await gw.db.query("SELECT count(*)::int AS n FROM quota_holds WHERE business_key = ANY($1)", [ids.map((id) => `task:${id}`)])).rows[0].n;
    expect(holds).toBe(0);
  }, 120_000);

});
