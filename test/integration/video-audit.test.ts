// test modes: postgres, embedded
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseHistoryFile } from '../../src/temporal/history';
import { gatewayCli } from '../helpers/gateway-cli';
import { http, testEnv } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { pollUntil, startVideoFixture, type VideoFixture } from '../helpers/video-fixture';

/** Issue 8 §5: the operator's list of tasks, each task's workflow history, and the CLI that exports and replays it. */
describe('video tasks: the replayable audit', () => {
  let fx: VideoFixture;
  let dir: string;
  beforeAll(async () => {
    fx = await startVideoFixture();
    dir = mkdtempSync(path.join(os.tmpdir(), 'video-audit-'));
  });
  afterAll(async () => {
    await fx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const cli = (args: string[]) => gatewayCli(['task', ...args]);


  it('GET /api/task/ lists the account\'s tasks of every family with filters and paging; another account sees none', async () => {
    const { key, acct } = await newKey(fx.gw);
    const a = (await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'one' } })).body.id;
    const f = (await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1-fast', prompt: 'fail here' } })).body.id;
    const c = (await http(fx.gw.baseUrl, 'POST', '/vendorB/v1/api/video/submit', { auth: `Bearer ${key}`, body: { prompt: 'three' } })).body.data.taskId;
    await pollUntil(fx.gw, `/v1/videos/${a}`, key, (b) => b.status === 'completed');
    await pollUntil(fx.gw, `/v1/videos/${f}`, key, (b) => b.status === 'failed');
    await pollUntil(fx.gw, `/vendorB/v1/api/video/status/${encodeURIComponent(c)}`, `Bearer ${key}`, (b) => b.data.status === 'completed');

    const all = await http(fx.gw.baseUrl, 'GET', '/api/task/', { auth: acct.systemToken });
    expect(all.status).toBe(200);
    expect(all.headers.get('x-total-count')).toBe('3');
    expect(all.body.data.map((t: { id: string }) => t.id).sort()).toEqual([a, f, c].sort());
    const done = all.body.data.find((t: { id: string }) => t.id === a);
    expect(done).toMatchObject({ family: 'A', model: 'video-3.1', status: 'completed', progress: 100, quota: 250_000, billed: 250_000, workflow_id: `video:${a}` });
    expect(all.body.data.find((t: { id: string }) => t.id === f)).toMatchObject({ status: 'failed', error_code: 'generation_failed', billed: null });

    const q = async (query: string) => (await http(fx.gw.baseUrl, 'GET', `/api/task/?${query}`, { auth: acct.systemToken })).body.data.map((t: { id: string }) => t.id);
    expect(await q('status=failed')).toEqual([f]);
    expect(await q('family=C')).toEqual([c]);
    expect(await q('model=video-3.1')).toEqual([a]);
    expect(await q(`start_timestamp=${Math.floor(Date.now() / 1000) + 60}`)).toEqual([]);
    expect(await q('end_timestamp=0')).toEqual([]);
    const page = await http(fx.gw.baseUrl, 'GET', '/api/task/?p=2&page_size=2', { auth: acct.systemToken });
    expect(page.body.data).toHaveLength(1);
    expect(page.headers.get('x-total-count')).toBe('3');
    const bad = await http(fx.gw.baseUrl, 'GET', '/api/task/?family=D', { auth: acct.systemToken });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ success: false, message: expect.stringContaining('family') });

    const other = await newKey(fx.gw);
    expect((await http(fx.gw.baseUrl, 'GET', '/api/task/', { auth: other.acct.systemToken })).body.data).toEqual([]);
    const foreign = await http(fx.gw.baseUrl, 'GET', `/api/task/${a}`, { auth: other.acct.systemToken });
    expect(foreign.status).toBe(404);
    expect(foreign.body.success).toBe(false);
    expect((await http(fx.gw.baseUrl, 'GET', `/api/task/${a}/history`, { auth: other.acct.systemToken })).status).toBe(404);
    expect((await http(fx.gw.baseUrl, 'GET', '/api/task/', { auth: `Bearer ${key}` })).status).toBe(401);
  });

  it('the history endpoint and `task history` export the workflow; `task replay` says it is deterministic, and catches a change', async () => {
    const { key, acct } = await newKey(fx.gw);
    const id = (await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'audit me' } })).body.id;
    await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed');

    // The task row reads completed once settled; the workflow closes a moment later.
    const lastEvent = (r: { body: any }) => r.body.data.runs.at(-1).history.events.at(-1).eventType;
    let res = await http(fx.gw.baseUrl, 'GET', `/api/task/${id}/history`, { auth: acct.systemToken });
    for (let i = 0; i < 100 && res.status === 200 && lastEvent(res) !== 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      res = await http(fx.gw.baseUrl, 'GET', `/api/task/${id}/history`, { auth: acct.systemToken });
    }
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ workflowId: `video:${id}`, workflowType: 'videoTaskWorkflow' });
    const events = res.body.data.runs[0].history.events.map((e: { eventType: string }) => e.eventType);
    expect(events.at(-1)).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
    expect(JSON.stringify(res.body)).not.toContain(key.slice(3));

    const out = path.join(dir, 'h.json');
    const exported = await cli(['history', id, '--out', out]);
    expect(exported).toMatchObject({ code: 0 });
    expect(parseHistoryFile(readFileSync(out, 'utf8')).workflowId).toBe(`video:${id}`);
    const fromApi = path.join(dir, 'api.json');
    writeFileSync(fromApi, JSON.stringify(res.body.data));
    const replayed = await cli(['replay', '--workflow-bundle', testEnv().workflowBundle, out, fromApi]);
    expect(replayed).toMatchObject({ code: 0, stdout: expect.stringContaining('2 of 2 runs replayed') });

    // A history whose task ran its upstream part with another activity is not what this code does.
    const tampered = JSON.parse(readFileSync(out, 'utf8'));
    const scheduled = tampered.runs[0].history.events
      .map((e: { activityTaskScheduledEventAttributes?: { activityType: { name: string } } }) => e.activityTaskScheduledEventAttributes)
      .filter(Boolean);
    expect(scheduled.map((a: { activityType: { name: string } }) => a.activityType.name)).toEqual(['runVideoUpstream']);
    scheduled[0].activityType.name = 'cancelVideoUpstream';
    const bad = path.join(dir, 'tampered.json');
    writeFileSync(bad, JSON.stringify(tampered));
    const failed = await cli(['replay', '--workflow-bundle', testEnv().workflowBundle, bad]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/NON-DETERMINISTIC/);
  }, 120_000);

  it('POST /api/task/{id}/replay replays the task against the running code and says it is deterministic', async () => {
    const { key, acct } = await newKey(fx.gw);
    const id = (await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'replay me' } })).body.id;
    await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed');
    const res = await http(fx.gw.baseUrl, 'POST', `/api/task/${id}/replay`, { auth: acct.systemToken });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ deterministic: true, runs: [{ run: 1, ok: true, non_deterministic: false, error: null }] });
    const other = await newKey(fx.gw);
    expect((await http(fx.gw.baseUrl, 'POST', `/api/task/${id}/replay`, { auth: other.acct.systemToken })).status).toBe(404);
    expect((await http(fx.gw.baseUrl, 'POST', `/api/task/${id}/replay`, {})).status).toBe(401);
  }, 120_000);
});
