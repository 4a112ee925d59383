import type { Worker } from '@temporalio/worker';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigStore } from '../../src/gateway-config/store';
import type { VideoSettings } from '../../src/domain/video/video-service';
import type { ServicesOptions } from '../../src/runtime/services';
import type { Tracing } from '../../src/tracing';
import { startSimulator, type Simulator } from '../../src/simulator';
import { http, startGateway, startWorker, type TestGateway } from './harness';
import { FAST_POLLS, ISSUE_VIDEO_YAML, VIDEO_KEY } from './video-config';

export { FAST_POLLS, ISSUE_VIDEO_YAML, VIDEO_KEY };

export interface VideoFixture {
  gw: TestGateway;
  sim: Simulator;
  worker: Worker;
  close(): Promise<void>;
}

/** A gateway on the issue's YAML (pointed at a simulator of its own), with a worker. */
export async function startVideoFixture(
  opts: {
    generationMs?: number;
    deadlineSeconds?: number;
    webhookRetry?: VideoSettings['webhookRetry'];
    outbox?: VideoSettings['outbox'];
    videoStarter?: ServicesOptions['videoStarter'];
    tracing?: Tracing;
    outbound?: ServicesOptions['outbound'];
    videoStore?: ServicesOptions['videoStore'];
    /** The gateway config (`http://127.0.0.1:9100` stands for the simulator); default: the issue's YAML. */
    yaml?: string;
    /** Further video settings (retention, the copy's window). */
    video?: Partial<VideoSettings>;
  } = {},
): Promise<VideoFixture> {
  const sim = await startSimulator({ apiKey: VIDEO_KEY, videoGenerationMs: opts.generationMs ?? 1200, maxRecords: 1000 });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-video-'));
  const file = path.join(dir, 'gateway.yaml');
  writeFileSync(file, (opts.yaml ?? ISSUE_VIDEO_YAML).split('http://127.0.0.1:9100').join(sim.url));
  const gw = await startGateway({
    config: ConfigStore.fromFile(file, { VIDEO_KEY }),
    video: { pollMs: FAST_POLLS, deadlineSeconds: opts.deadlineSeconds ?? 120, webhookRetry: opts.webhookRetry, outbox: opts.outbox, ...opts.video },
    videoStore: opts.videoStore,
    videoStarter: opts.videoStarter,
    tracing: opts.tracing,
    outbound: opts.outbound,
  });
  const worker = await startWorker(gw, { tracing: opts.tracing });
  return {
    gw,
    sim,
    worker: worker.worker,
    async close() {
      await worker.stop();
      await gw.close();
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Reads `path` until `done(body)` (bounded). */
export async function pollUntil(
  gw: TestGateway,
  pathname: string,
  auth: string,
  done: (body: any) => boolean,
  timeoutMs = 30_000,
): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await http(gw.baseUrl, 'GET', pathname, { auth });
    if (res.status === 200 && done(res.body)) return res.body;
    if (Date.now() > until) throw new Error(`${pathname} did not reach the state in ${timeoutMs} ms: ${res.status} ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Ledger rows of a task, the hold left for it, and the key's used quota. */
export async function billingOf(gw: TestGateway, taskId: string, tokenId: number) {
  const ledger = await gw.db.query('SELECT quota::int AS quota, model, units FROM ledger WHERE task_id = $1', [taskId]);
  const holds = await gw.db.query('SELECT count(*)::int AS n FROM quota_holds WHERE business_key = $1', [`task:${taskId}`]);
  const token = await gw.db.query('SELECT used_quota::int AS used FROM tokens WHERE id = $1', [tokenId]);
  return { ledger: ledger.rows, holds: holds.rows[0].n as number, used: token.rows[0].used as number };
}
