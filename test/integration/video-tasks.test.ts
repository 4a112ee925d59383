// test modes: postgres, embedded
import { http } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { billingOf, pollUntil, startVideoFixture, type VideoFixture } from '../helpers/video-fixture';

/**
 * Issue 8 §2-4 over real HTTP: the three front doors on the YAML config, workflows on a real Temporal
 * worker, the simulator as the video upstream. Billing happens once, on completion only.
 */
describe('video tasks: submit, poll, bill once, result links', () => {
  let fx: VideoFixture;
  beforeAll(async () => {
    fx = await startVideoFixture();
  });
  afterAll(async () => {
    await fx?.close();
  });

  const raw = async (url: string, headers: Record<string, string> = {}) => {
    const res = await fetch(url, { headers });
    return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  };

  it('family A: queued at once, completed, billed exactly once (0.5 USD), content with a signed link', async () => {
    const { key, record, acct } = await newKey(fx.gw);
    const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'a cat on a skateboard' } });
    expect(created.status).toBe(200);
    expect(created.headers.get('x-request-id')).toBeTruthy();
    expect(created.body).toEqual({ id: expect.stringMatching(/^video_[0-9a-f]{32}$/), object: 'video', created: expect.any(Number), status: 'queued', model: 'video-3.1' });
    const id = created.body.id;

    // Before completion the content is not ready.
    const early = await http(fx.gw.baseUrl, 'GET', `/v1/videos/${id}/content`, { auth: `Bearer ${key}` });
    expect(early.status).toBe(409);
    expect(early.body.error).toEqual({ code: 'video_not_ready', message: expect.any(String), type: 'invalid_request_error' });

    const done = await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed');
    expect(done).toMatchObject({ id, object: 'video', status: 'completed', model: 'video-3.1', prompt: 'a cat on a skateboard', progress: 100 });

    const content = await http(fx.gw.baseUrl, 'GET', `/v1/videos/${id}/content`, { auth: key });
    expect(content.status).toBe(200);
    expect(content.body).toMatchObject({ id, status: 'completed', duration: expect.any(Number), resolution: expect.stringMatching(/^\d+x\d+$/) });
    const url = new URL(content.body.url);
    expect(url.origin).toBe(fx.gw.baseUrl);
    expect(url.pathname).toBe(`/v1/files/video/${id}`);
    expect(JSON.stringify(content.body)).not.toContain(fx.sim.url);

    const b = await billingOf(fx.gw, id, record.id);
    expect(b.ledger).toEqual([{ quota: 250_000, model: 'video-3.1', units: 1 }]);
    expect(b.holds).toBe(0);
    expect(b.used).toBe(250_000);
    const log = await http(fx.gw.baseUrl, 'GET', '/api/log/?model_name=video-3.1', { auth: acct.systemToken });
    expect(log.status).toBe(200);
    expect(log.body.data).toEqual([expect.objectContaining({ model_name: 'video-3.1', quota: 250_000, request_id: created.headers.get('x-request-id') })]);
  });

  it('result links: no credentials, signature and expiry checked, Range passed through', async () => {
    const { key } = await newKey(fx.gw);
    const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1-fast', prompt: 'waves' } });
    const id = created.body.id;
    await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed');
    const { url } = (await http(fx.gw.baseUrl, 'GET', `/v1/videos/${id}/content`, { auth: key })).body;

    const file = await raw(url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('video/mp4');
    expect(file.body.length).toBe(4096);
    expect(file.headers.get('x-request-id')).toBeTruthy();

    const part = await raw(url, { range: 'bytes=0-99' });
    expect(part.status).toBe(206);
    expect(part.body.length).toBe(100);
    expect(part.headers.get('content-range')).toBe('bytes 0-99/4096');

    const withAuth = await raw(url, { authorization: `Bearer ${key}` });
    expect(withAuth.status).toBe(403);
    expect(JSON.parse(withAuth.body.toString()).error.message).toMatch(/no credentials/);

    const tampered = new URL(url);
    const sig = tampered.searchParams.get('sig')!;
    tampered.searchParams.set('sig', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1));
    expect((await raw(tampered.toString())).status).toBe(403);

    const expired = fx.gw.deps.videoLinks.signLink({ taskId: id, expiresAt: Math.floor(Date.now() / 1000) - 1 });
    expect((await raw(`${fx.gw.baseUrl}${expired.path}`)).status).toBe(403);
    const otherTask = fx.gw.deps.videoLinks.signLink({ taskId: 'video_doesnotexist' });
    expect((await raw(`${fx.gw.baseUrl}${otherTask.path}`)).status).toBe(404);
  });

  it('family A failure upstream: failed with the reason, nothing billed, hold released', async () => {
    const { key, record } = await newKey(fx.gw);
    const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'please fail now' } });
    const id = created.body.id;
    const failed = await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'failed');
    expect(failed.error).toEqual({ code: 'generation_failed', message: expect.any(String) });
    const content = await http(fx.gw.baseUrl, 'GET', `/v1/videos/${id}/content`, { auth: key });
    expect(content.status).toBe(409);
    const b = await billingOf(fx.gw, id, record.id);
    expect(b).toEqual({ ledger: [], holds: 0, used: 0 });
  });

  it('family A cancel: DELETE stops the task, nothing billed; a finished task cannot be cancelled', async () => {
    const { key, record } = await newKey(fx.gw);
    const { id } = (await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'slow one' } })).body;
    const del = await http(fx.gw.baseUrl, 'DELETE', `/v1/videos/${id}`, { auth: key });
    expect(del.status).toBe(200);
    expect(del.body.id).toBe(id);
    const ended = await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'failed');
    expect(ended.error.code).toBe('cancelled');
    expect(await billingOf(fx.gw, id, record.id)).toEqual({ ledger: [], holds: 0, used: 0 });
    const again = await http(fx.gw.baseUrl, 'DELETE', `/v1/videos/${id}`, { auth: key });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('video_not_cancellable');
  });

  it('family A errors: unknown id, another account, validation, family B model, quota, allowlist, credentials', async () => {
    const { key } = await newKey(fx.gw);
    const other = await newKey(fx.gw);
    const unknown = await http(fx.gw.baseUrl, 'GET', '/v1/videos/video_nope', { auth: key });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: { code: 'video_not_found', message: expect.any(String), type: 'invalid_request_error' } });

    const { id } = (await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'mine' } })).body;
    const foreign = await http(fx.gw.baseUrl, 'GET', `/v1/videos/${id}`, { auth: other.key });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('video_not_found');
    expect((await http(fx.gw.baseUrl, 'DELETE', `/v1/videos/${id}`, { auth: other.key })).status).toBe(404);

    const noPrompt = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1' } });
    expect(noPrompt.status).toBe(400);
    expect(noPrompt.body.error.code).toBe('invalid_prompt');
    const badModel = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-9', prompt: 'x' } });
    expect(badModel.status).toBe(400);
    expect(badModel.body.error.code).toBe('invalid_model');
    const familyB = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'vendorA-2.7-r2v', prompt: 'x' } });
    expect(familyB.status).toBe(400);
    expect(familyB.body.error.message).toContain('/vendorA/api/v1/services/aigc/video-generation/video-synthesis');
    const unserved = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1-landscape', prompt: 'x' } });
    expect(unserved.status).toBe(400);
    expect(unserved.body.error.code).toBe('invalid_model');

    const poor = await newKey(fx.gw, { remain_quota: 10 });
    const quota = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: poor.key, body: { model: 'video-3.1', prompt: 'x' } });
    expect(quota.status).toBe(429);
    expect(quota.body.error.code).toBe('quota_exceeded');
    const limited = await newKey(fx.gw, { models: 'video3' });
    const denied = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: limited.key, body: { model: 'video-3.1', prompt: 'x' } });
    expect(denied.status).toBe(403);
    expect(denied.body.error.message).toMatch(/not authorized/i);
    for (const k of [poor, limited]) {
      const rows = await fx.gw.db.query('SELECT count(*)::int AS n FROM video_tasks WHERE token_id = $1', [k.record.id]);
      expect(rows.rows[0].n).toBe(0);
    }

    const noKey = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { body: { model: 'video-3.1', prompt: 'x' } });
    expect(noKey.status).toBe(401);
    expect(noKey.body.error).toMatchObject({ code: 'invalid_api_key', type: 'authentication_error' });
  });

  it('an Idempotency-Key returns the same task and holds once', async () => {
    const { key, record } = await newKey(fx.gw);
    const send = () =>
      http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, headers: { 'idempotency-key': 'job-42' }, body: { model: 'video-3.1', prompt: 'once' } });
    const [a, b] = [await send(), await send()];
    expect(a.status).toBe(200);
    expect(b.body.id).toBe(a.body.id);
    const tasks = await fx.gw.db.query('SELECT count(*)::int AS n FROM video_tasks WHERE token_id = $1', [record.id]);
    expect(tasks.rows[0].n).toBe(1);
    await pollUntil(fx.gw, `/v1/videos/${a.body.id}`, key, (x) => x.status === 'completed');
    expect((await billingOf(fx.gw, a.body.id, record.id)).ledger).toHaveLength(1);
  });

  it('an Idempotency-Key reused on another video family is a 409 naming the task, in that family\'s format, holding nothing', async () => {
    const { key, record } = await newKey(fx.gw);
    const headers = { 'idempotency-key': 'job-across-families' };
    const first = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, headers, body: { model: 'video-3.1', prompt: 'once' } });
    expect(first.status).toBe(200);
    const again = await http(fx.gw.baseUrl, 'POST', '/vendorB/v1/api/video/submit', { auth: `Bearer ${key}`, headers, body: { prompt: 'a red kite' } });
    expect(again.status).toBe(409);
    expect(again.headers.get('x-request-id')).toBeTruthy();
    expect(again.body).toMatchObject({ success: false, message: expect.stringContaining(first.body.id) });
    const b = await http(fx.gw.baseUrl, 'POST', '/vendorA/api/v1/services/aigc/video-generation/video-synthesis', {
      auth: `Bearer ${key}`,
      headers: { ...headers, 'x-vendor-async': 'enable' },
      body: { model: 'vendorA-2.7-r2v', input: { prompt: 'x', media: [{ type: 'reference_image', url: 'https://example.com/a.png' }] }, parameters: { duration: 4 } },
    });
    expect(b.status).toBe(409);
    expect(b.body).toMatchObject({ message: expect.stringContaining(first.body.id), request_id: b.headers.get('x-request-id') });
    const tasks = await fx.gw.db.query('SELECT count(*)::int AS n FROM video_tasks WHERE token_id = $1', [record.id]);
    expect(tasks.rows[0].n).toBe(1);
  });

  it('family B: X-Vendor-Async required, PENDING then completed, per-second price, result_url link', async () => {
    const { key, record } = await newKey(fx.gw);
    const body = { model: 'vendorA-2.7-r2v', input: { prompt: 'image 1 dances', media: [{ type: 'reference_image', url: 'https://example.com/a.png' }] }, parameters: { duration: 4 } };
    const path = '/vendorA/api/v1/services/aigc/video-generation/video-synthesis';
    const sync = await http(fx.gw.baseUrl, 'POST', path, { auth: `Bearer ${key}`, body });
    expect(sync.status).toBe(400);
    expect(sync.body).toEqual({ code: 'InvalidParameter', message: expect.stringContaining('X-Vendor-Async'), request_id: sync.headers.get('x-request-id') });

    const created = await http(fx.gw.baseUrl, 'POST', path, { auth: `Bearer ${key}`, headers: { 'x-vendor-async': 'enable' }, body });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ output: { task_id: expect.any(String), task_status: 'PENDING' }, request_id: created.headers.get('x-request-id') });
    const id = created.body.output.task_id;
    const first = await http(fx.gw.baseUrl, 'GET', `/v1/tasks/${id}`, { auth: `Bearer ${key}` });
    expect(['submitted', 'in_progress']).toContain(first.body.status);
    expect(first.body.result_url).toBeNull();
    const done = await pollUntil(fx.gw, `/v1/tasks/${id}`, `Bearer ${key}`, (b) => b.status === 'completed');
    expect(done).toMatchObject({ status: 'completed', progress: 100, task_id: id });
    expect(new URL(done.result_url).origin).toBe(fx.gw.baseUrl);
    expect((await raw(done.result_url)).status).toBe(200);
    // 0.1 USD per second x 4 s = 0.4 USD = 200,000 credits.
    expect((await billingOf(fx.gw, id, record.id)).ledger).toEqual([{ quota: 200_000, model: 'vendorA-2.7-r2v', units: 1 }]);

    const tooMany = await http(fx.gw.baseUrl, 'POST', path, {
      auth: `Bearer ${key}`,
      headers: { 'x-vendor-async': 'enable' },
      body: { model: 'vendorC-1.0-r2v', input: { prompt: 'x', media: [] } },
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.code).toBe('InvalidParameter');
    const missing = await http(fx.gw.baseUrl, 'GET', '/v1/tasks/nope', { auth: `Bearer ${key}` });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('TaskNotFound');
  });

  it('family C: taskId <model>:<uuid>, pollingUrl is ours, completed carries data.video_url; family errors', async () => {
    const { key, record } = await newKey(fx.gw);
    const created = await http(fx.gw.baseUrl, 'POST', '/vendorB/v1/api/video/submit', { auth: `Bearer ${key}`, body: { prompt: 'a red kite' } });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      success: true,
      data: { taskId: expect.stringMatching(/^video3:[0-9a-f-]{36}$/), pollingUrl: expect.any(String), status: 'processing', message: expect.any(String) },
    });
    const { taskId, pollingUrl } = created.body.data;
    expect(pollingUrl).toBe(`${fx.gw.baseUrl}/vendorB/v1/api/video/status/${encodeURIComponent(taskId)}`);
    const done = await pollUntil(fx.gw, new URL(pollingUrl).pathname, `Bearer ${key}`, (b) => b.data.status === 'completed');
    expect(new URL(done.data.video_url).origin).toBe(fx.gw.baseUrl);
    expect((await billingOf(fx.gw, taskId, record.id)).ledger).toEqual([{ quota: 150_000, model: 'video3', units: 1 }]);

    const noPrompt = await http(fx.gw.baseUrl, 'POST', '/vendorB/v1/api/video/submit', { auth: `Bearer ${key}`, body: { model: 'video3' } });
    expect(noPrompt.status).toBe(400);
    expect(noPrompt.body).toEqual({ success: false, message: expect.any(String), error_code: 'INVALID_PROMPT', details: { field: 'prompt', reason: expect.any(String) } });
    const badModel = await http(fx.gw.baseUrl, 'POST', '/vendorB/v1/api/video/submit', { auth: `Bearer ${key}`, body: { prompt: 'x', model: 'nope' } });
    expect(badModel.body.error_code).toBe('INVALID_MODEL');
    const poor = await newKey(fx.gw, { remain_quota: 1 });
    const quota = await http(fx.gw.baseUrl, 'POST', '/vendorB/v1/api/video/submit', { auth: `Bearer ${poor.key}`, body: { prompt: 'x' } });
    expect(quota.status).toBe(429);
    expect(quota.body.error_code).toBe('QUOTA_EXCEEDED');
    const missing = await http(fx.gw.baseUrl, 'GET', '/vendorB/v1/api/video/status/video3:nope', { auth: `Bearer ${key}` });
    expect(missing.status).toBe(404);
    expect(missing.body.error_code).toBe('TASK_NOT_FOUND');
  });

  it('a submit counts against the key\'s requests per minute; reading its task does not', async () => {
    const { key, record } = await newKey(fx.gw);
    await fx.gw.deps.tokens.update(record.user_id, record.id, { name: 'video-rpm', remain_quota: 10_000_000, rpm_limit: 1 });
    // Both submits in one minute of the real clock.
    const msLeft = 60_000 - (Date.now() % 60_000);
    if (msLeft < 5_000) await new Promise((r) => setTimeout(r, msLeft + 100));
    const first = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'one a minute' } });
    expect([first.status, first.headers.get('x-ratelimit-remaining-requests')]).toEqual([200, '0']);
    for (let i = 0; i < 3; i++) expect((await http(fx.gw.baseUrl, 'GET', `/v1/videos/${first.body.id}`, { auth: key })).status).toBe(200);
    const second = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'a second one' } });
    expect([second.status, second.body.error?.code, Number(second.headers.get('retry-after')) > 0]).toEqual([429, 'rate_limit_exceeded', true]);
    const tasks = await fx.gw.db.query('SELECT count(*)::int AS n FROM video_tasks WHERE token_id = $1', [record.id]);
    expect(tasks.rows[0].n).toBe(1);
  });

  it('a submit\'s hold counts against the key\'s periodic budget', async () => {
    const { key, record } = await newKey(fx.gw);
    await fx.gw.deps.tokens.update(record.user_id, record.id, { name: 'video-period', remain_quota: 10_000_000, period_quota: 1, quota_period: 'day' });
    const refused = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'over budget' } });
    expect([refused.status, refused.body.error?.code]).toEqual([429, 'quota_exceeded']);
    expect(refused.body.error.message).toContain('period');
    await fx.gw.deps.tokens.update(record.user_id, record.id, { name: 'video-period', remain_quota: 10_000_000, period_quota: 100_000_000, quota_period: 'day' });
    const ok = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'within budget' } });
    expect(ok.status).toBe(200);
    // One snapshot: while the task runs, its hold is what the period has used; once it finished, what it was billed.
    const { rows } = await fx.gw.db.query(
      `SELECT t.period_used::bigint AS used, h.amount::bigint AS held, l.quota::bigint AS billed
         FROM tokens t LEFT JOIN quota_holds h ON h.business_key = $2 LEFT JOIN ledger l ON l.task_id = $3 WHERE t.id = $1`,
      [record.id, `task:${ok.body.id}`, ok.body.id],
    );
    expect(Number(rows[0].used)).toBe(Number(rows[0].held ?? rows[0].billed));
    expect(Number(rows[0].used)).toBeGreaterThan(0);
  });

  it('X-Callback-Url must be https or http to loopback', async () => {
    const { key } = await newKey(fx.gw);
    const bad = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, headers: { 'x-callback-url': 'http://example.com/hook' }, body: { model: 'video-3.1', prompt: 'x' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/X-Callback-Url/);
  });
});

describe('video tasks: the deadline', () => {
  let fx: VideoFixture;
  beforeAll(async () => {
    // Generation takes a minute upstream; the gateway gives each task 2 seconds.
    fx = await startVideoFixture({ generationMs: 60_000, deadlineSeconds: 2 });
  });
  afterAll(async () => {
    await fx?.close();
  });

  it('a task past its deadline fails with timeout, the upstream job is cancelled, nothing is billed', async () => {
    const { key, record } = await newKey(fx.gw);
    const { id } = (await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'takes forever' } })).body;
    const ended = await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'failed', 20_000);
    expect(ended.error.code).toBe('timeout');
    expect(await billingOf(fx.gw, id, record.id)).toEqual({ ledger: [], holds: 0, used: 0 });
    const cancels = fx.sim.requests.filter((r) => r.method === 'DELETE' && r.path.startsWith('/v1/videos/'));
    expect(cancels.length).toBeGreaterThanOrEqual(1);
  });
});
