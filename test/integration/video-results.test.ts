import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { ensureRetentionSchedule, retentionScheduleId } from '../../src/temporal/video-retention-schedule';
import { openObjectStore } from '../../src/stores';
import { createLocalObjectStore } from '../../src/stores/local-store';
import { fakeMp4 } from '../../src/simulator/video-store';
import { http, newAccount } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { pollUntil, startVideoFixture, type VideoFixture } from '../helpers/video-fixture';
import { waitFor } from '../helpers/wait';

/**
 * Finished videos are kept in the gateway's object store before a task reads completed: links serve the copy
 * (Range included) after the upstream's file is gone, a copy that cannot be made falls back to the upstream's
 * link (recorded, counted in /metrics), and retention (a Temporal schedule) deletes copies past their time.
 * Local files and an S3 API (s3rver on loopback, through the AWS SDK) alike.
 */

const raw = async (url: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
};

async function completedTask(fx: VideoFixture, key: string, prompt: string): Promise<{ id: string; url: string }> {
  const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1-fast', prompt } });
  expect(created.status).toBe(200);
  const id = created.body.id as string;
  await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed' || b.status === 'failed');
  const content = await http(fx.gw.baseUrl, 'GET', `/v1/videos/${id}/content`, { auth: key });
  expect(content.status).toBe(200);
  return { id, url: content.body.url };
}

/** The link serves the whole file and byte ranges of it, after the upstream's files are deleted. */
async function expectServedAfterUpstreamDeleted(fx: VideoFixture, id: string, url: string): Promise<void> {
  expect(fx.sim.deleteVideoFiles()).toBeGreaterThan(0);
  const upstreamUrl = (await fx.gw.db.query('SELECT asset_url FROM video_tasks WHERE id = $1', [id])).rows[0].asset_url;
  expect((await raw(upstreamUrl)).status).toBe(404);

  const file = await raw(url);
  expect(file.status).toBe(200);
  expect(file.headers.get('content-type')).toBe('video/mp4');
  expect(file.headers.get('content-length')).toBe('4096');
  expect(file.body.equals(fakeMp4(upstreamUrl.split('/').pop()!.replace(/\.mp4$/, '')))).toBe(true);

  const part = await raw(url, { range: 'bytes=100-199' });
  expect(part.status).toBe(206);
  expect(part.headers.get('content-range')).toBe('bytes 100-199/4096');
  expect(part.body.equals(file.body.subarray(100, 200))).toBe(true);
  const tail = await raw(url, { range: 'bytes=-10' });
  expect(tail.status).toBe(206);
  expect(tail.body.equals(file.body.subarray(4086))).toBe(true);
  const outside = await raw(url, { range: 'bytes=5000-' });
  expect(outside.status).toBe(416);
  expect(outside.headers.get('content-range')).toBe('bytes */4096');
}

describe('video results in the local object store', () => {
  let fx: VideoFixture;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'video-results-'));
    fx = await startVideoFixture({ videoStore: createLocalObjectStore(dir), video: { resultWindowMs: 3000, retentionSeconds: 2 } });
  });
  afterAll(async () => {
    await fx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a finished video is served from our copy after the upstream deleted its file (Range included)', async () => {
    const { key, acct } = await newKey(fx.gw);
    const { id, url } = await completedTask(fx, key, 'a lighthouse at dusk');
    const stored = path.join(dir, 'results', encodeURIComponent(id));
    expect(statSync(stored).size).toBe(4096);
    expect(statSync(stored).mode & 0o777).toBe(0o600);
    await expectServedAfterUpstreamDeleted(fx, id, url);

    const record = await http(fx.gw.baseUrl, 'GET', `/api/task/${id}`, { auth: acct.systemToken });
    expect(record.body.data.result).toEqual({ stored: true, expires_at: expect.any(Number), fallback: null, deleted_at: null });
  });

  it('a copy that cannot be made falls back to the upstream link: recorded, counted, still billed once', async () => {
    const { key, acct } = await newKey(fx.gw);
    fx.sim.addFault({ kind: 'status', status: 503, path: '.mp4' });
    let task;
    try {
      task = await completedTask(fx, key, 'a copy that fails');
    } finally {
      fx.sim.clearFaults();
    }
    const record = await http(fx.gw.baseUrl, 'GET', `/api/task/${task.id}`, { auth: acct.systemToken });
    expect(record.body.data.status).toBe('completed');
    expect(record.body.data.result).toEqual({ stored: false, expires_at: null, fallback: 'the copy did not complete within its window', deleted_at: null });
    const ledger = await fx.gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE task_id = $1', [task.id]);
    expect(ledger.rows[0].n).toBe(1);
    // The upstream's file, streamed through while it lasts.
    const file = await raw(task.url);
    expect(file.status).toBe(200);
    expect(file.body.length).toBe(4096);
    const metrics = await fetch(`${fx.gw.baseUrl}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/gateway_video_results\{state="fallback"\} [1-9]/);
  });

  it('retention: the schedule deletes copies past their time; links then answer 404; the console sees it', async () => {
    const { key, acct } = await newKey(fx.gw);
    const { id, url } = await completedTask(fx, key, 'kept for two seconds');
    expect((await raw(url)).status).toBe(200);
    await ensureRetentionSchedule(fx.gw.temporal, fx.gw.taskQueue, 2);
    const schedule = fx.gw.temporal.schedule.getHandle(retentionScheduleId(fx.gw.taskQueue));
    try {
      // Retention compares result_stored_at with the database's clock: wait until the copy is past its 2 s there.
      await waitFor(
        async () => (await fx.gw.db.query(`SELECT result_stored_at < now() - interval '2 seconds' AS expired FROM video_tasks WHERE id = $1`, [id])).rows[0].expired === true,
        { timeoutMs: 10_000, message: 'the stored copy to outlive its 2 s retention' },
      );
      await schedule.trigger();
      const until = Date.now() + 20_000;
      let deletedAt = null;
      while (Date.now() < until && !deletedAt) {
        await new Promise((r) => setTimeout(r, 200));
        deletedAt = (await fx.gw.db.query('SELECT result_deleted_at FROM video_tasks WHERE id = $1', [id])).rows[0].result_deleted_at;
      }
      expect(deletedAt).not.toBeNull();
      expect(statSync(path.join(dir, 'results', encodeURIComponent(id)), { throwIfNoEntry: false })).toBeUndefined();
      const gone = await raw(url);
      expect(gone.status).toBe(404);
      expect(JSON.parse(gone.body.toString()).error.message).toMatch(/no longer available/);

      const record = await http(fx.gw.baseUrl, 'GET', `/api/task/${id}`, { auth: acct.systemToken });
      expect(record.body.data.result).toMatchObject({ stored: false, deleted_at: expect.any(Number) });
      // The operator's view: counts span every account, so an admin account's token only.
      expect((await http(fx.gw.baseUrl, 'GET', '/api/video/retention', { auth: acct.systemToken })).status).toBe(403);
      const admin = await newAccount(fx.gw.db, { admin: true });
      const retention = await http(fx.gw.baseUrl, 'GET', '/api/video/retention', { auth: admin.systemToken });
      expect(retention.status).toBe(200);
      expect(retention.body.data).toEqual({
        retention_days: 2 / 86_400,
        store: `local ${dir}`,
        schedule: { id: retentionScheduleId(fx.gw.taskQueue), next_run_at: expect.any(Number), last_run_at: expect.any(Number), runs: expect.any(Number) },
        results: { stored: expect.any(Number), fallback: expect.any(Number), deleted: expect.any(Number), stored_bytes: expect.any(Number) },
      });
      expect(retention.body.data.results.deleted).toBeGreaterThanOrEqual(1);
    } finally {
      await schedule.delete();
    }
  });
});

describe('video results in an S3 API (s3rver on loopback, the AWS SDK)', () => {
  let fx: VideoFixture;
  let s3: S3rver;
  let dir: string;
  let endpoint: string;
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 's3rver-'));
    s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: 'gateway-videos', configs: [] }] });
    const address = (await s3.run()) as { port: number };
    endpoint = `http://127.0.0.1:${address.port}`;
    // s3rver's fixed credentials, found by the SDK's default chain as operators' AWS_* variables are.
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    const store = openObjectStore('s3://gateway-videos/prod/videos', '/unused', { AWS_ENDPOINT_URL_S3: endpoint, AWS_REGION: 'us-east-1' });
    fx = await startVideoFixture({ videoStore: store });
  });
  afterAll(async () => {
    await fx?.close();
    await s3?.close();
    process.env.AWS_ACCESS_KEY_ID = saved.id;
    process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
    if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
    if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
    rmSync(dir, { recursive: true, force: true });
  });

  it('the copy is an object under the prefix; the link serves it after the upstream deleted its file', async () => {
    const { key } = await newKey(fx.gw);
    const { id, url } = await completedTask(fx, key, 'a train through snow');
    const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    const listed = await client.send(new ListObjectsV2Command({ Bucket: 'gateway-videos', Prefix: 'prod/videos/results/' }));
    expect(listed.Contents?.map((o) => [o.Key, o.Size])).toContainEqual([`prod/videos/results/${encodeURIComponent(id)}`, 4096]);
    await expectServedAfterUpstreamDeleted(fx, id, url);
  });
});
