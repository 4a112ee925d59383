// Records the video workflow histories committed in this directory (video-<family>-<outcome>.json: completed,
// failed, timeout and cancelled for families A, B and C), replayed by test/integration/workflow-replay.test.ts.
// Re-record after an intended change to src/workflows/video-task.ts:
//
//   npx tsx test/histories/record-video.ts
//
// Starts what it needs and stops it again: a fresh database (as the tests do), a Temporal dev server, two upstream
// simulators (one fast, one that never finishes in time), the gateway services on the issue's YAML config and a
// worker each. Histories hold ids, states and timings only: no key material or upstream credential.
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { createAccount } from '../../src/domain/accounts/accounts';
import { createRepositories } from '../../src/db/repositories';
import type { ApiKeyPrincipal } from '../../src/domain/keys/key-auth';
import type { VideoFamily } from '../../src/domain/video/validation';
import { ConfigStore } from '../../src/gateway-config/store';
import { createServices, type Services } from '../../src/runtime/services';
import { startDevServer } from '../../src/temporal/dev-server';
import { exportWorkflowHistory, parseHistoryFile, replayHistories } from '../../src/temporal/history';
import { videoWorkflowId } from '../../src/temporal/video-starter';
import { startSimulator } from '../../src/simulator';
import { createGatewayWorker } from '../../src/worker/worker';
import { FAST_POLLS, ISSUE_VIDEO_YAML, VIDEO_KEY } from '../helpers/video-config';
import { resolveTestDatabase } from '../helpers/test-database';

const DIR = __dirname;
const IDENTITY = 'history-recorder';
const log = (line: string) => process.stdout.write(`[record-video] ${line}\n`);

const REQUESTS: Record<VideoFamily, (prompt: string) => { model: string; prompt: string; duration?: number; body: Record<string, unknown> }> = {
  A: (prompt) => ({ model: 'video-3.1', prompt, body: { model: 'video-3.1', prompt } }),
  B: (prompt) => ({
    model: 'vendorA-2.7-r2v',
    prompt,
    duration: 5,
    body: { model: 'vendorA-2.7-r2v', input: { prompt, media: [] }, parameters: { resolution: '1080P', ratio: '16:9', duration: 5, prompt_extend: true, watermark: false } },
  }),
  C: (prompt) => ({ model: 'video3', prompt, body: { model: 'video3', prompt, images: [], enhance_prompt: false } }),
};

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const database = await resolveTestDatabase();
  const closing: Array<() => Promise<unknown>> = [() => database.close()];
  try {
    await migrate(database.url);
    const temporal = await startDevServer({ log });
    closing.unshift(() => temporal.shutdown());
    const db = createPool(database.url, 5);
    closing.unshift(() => db.end());
    const connection = await Connection.connect({ address: temporal.address });
    closing.unshift(() => connection.close());
    const client = new Client({ connection, namespace: temporal.namespace, identity: IDENTITY });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'record-video-'));

    /** Services and a worker on a config whose upstream is a simulator finishing tasks in `generationMs`. */
    async function stack(name: string, generationMs: number, deadlineSeconds: number): Promise<Services> {
      const sim = await startSimulator({ apiKey: VIDEO_KEY, videoGenerationMs: generationMs, maxRecords: 0 });
      closing.unshift(() => sim.close());
      const file = path.join(dir, `${name}.yaml`);
      writeFileSync(file, ISSUE_VIDEO_YAML.split('http://127.0.0.1:9100').join(sim.url));
      const services = await createServices({
        db,
        secret: 'history-recorder-secret-history-recorder-secret',
        temporal: { client, taskQueue: name },
        gatewayConfig: ConfigStore.fromFile(file, { VIDEO_KEY }),
        video: { pollMs: FAST_POLLS, deadlineSeconds },
      });
      closing.unshift(() => services.close());
      const { worker, connection: wc } = await createGatewayWorker({
        address: temporal.address,
        namespace: temporal.namespace,
        taskQueue: name,
        deps: services.activities,
        workerOptions: { identity: IDENTITY },
      });
      const running = worker.run();
      closing.unshift(async () => {
        worker.shutdown();
        await running;
        await wc.close();
      });
      return services;
    }

    const fast = await stack('video-history', 1500, 120);
    const slow = await stack('video-history-timeout', 600_000, 3);
    const key = await principal(db, fast);
    const recorded: Array<{ name: string; workflowId: string }> = [];
    const submit = async (services: Services, family: VideoFamily, prompt: string) =>
      (await services.api.videos.submit(family, key, REQUESTS[family](prompt), { requestId: `record-${family}-${prompt.replace(/\W+/g, '-')}` })).task.id;
    const finished = (id: string) => client.workflow.getHandle(videoWorkflowId(id)).result();

    for (const family of ['A', 'B', 'C'] as const) {
      const f = family.toLowerCase();
      const completed = await submit(fast, family, 'a lighthouse at dusk');
      const failed = await submit(fast, family, 'this one will fail upstream');
      const timeout = await submit(slow, family, 'never done in time');
      const cancelled = await submit(fast, family, 'cancel me');
      await new Promise((r) => setTimeout(r, 400));
      await fast.api.videos.cancel(key.accountId, cancelled, family);
      for (const [outcome, id] of Object.entries({ completed, failed, timeout, cancelled })) {
        const result = await finished(id);
        log(`${family} ${outcome}: ${JSON.stringify(result)}`);
        recorded.push({ name: `video-${f}-${outcome}`, workflowId: videoWorkflowId(id) });
      }
    }

    const texts = await Promise.all(recorded.map((r) => exportWorkflowHistory(client, r.workflowId, undefined, { allRuns: true })));
    const reports = await replayHistories(texts.map((t, i) => parseHistoryFile(t, recorded[i].name)));
    const bad = reports.filter((r) => !r.ok);
    if (bad.length > 0) throw new Error(`recorded histories do not replay:\n${bad.map((r) => `${r.workflowId}: ${r.error}`).join('\n')}`);
    recorded.forEach((r, i) => {
      writeFileSync(path.join(DIR, `${r.name}.json`), texts[i]);
      log(`${r.name}.json: ${parseHistoryFile(texts[i]).runs[0].history.events.length} events`);
    });
  } finally {
    for (const close of closing) await close().catch((err) => log(`clean-up: ${(err as Error).message}`));
  }
}

async function principal(db: Pool, services: Services): Promise<ApiKeyPrincipal> {
  const { account } = await createAccount(createRepositories(db), { username: 'video-auditor', password: 'history-recorder' });
  const record = await services.api.tokens.create(account.id, { name: 'audit', unlimited_quota: true });
  return { tokenId: record.id, accountId: account.id, name: record.name, group: '', models: [], unlimitedQuota: true, expiredTime: -1, rpmLimit: 0, tpmLimit: 0, maxConcurrency: 0, periodQuota: 0, quotaPeriod: null };
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
