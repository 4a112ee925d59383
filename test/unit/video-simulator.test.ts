import { FAKE_MP4_BYTES, fakeMp4, parseRange, startSimulator, VideoStore, type Simulator } from '../../src/simulator';

const KEY = 'sk-upstream-video';
const B_SUBMIT = '/vendorA/api/v1/services/aigc/video-generation/video-synthesis';
const C_SUBMIT = '/vendorB/v1/api/video/submit';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function json(res: Response): Promise<any> {
  return res.json();
}

/**
 * Polls every 40 ms until `done(body)` (at most 5 s) and returns the distinct statuses seen, in order, with the
 * last body. Robust to a loaded machine: it asserts order, not timing.
 */
async function pollStatuses(read: () => Promise<any>, status: (b: any) => string, done: (s: string) => boolean) {
  const seen: string[] = [];
  const until = Date.now() + 5000;
  let last: any;
  for (;;) {
    last = await read();
    const st = status(last);
    if (seen[seen.length - 1] !== st) seen.push(st);
    if (done(st) || Date.now() > until) return { seen, last };
    await sleep(40);
  }
}

describe('VideoStore (time-driven states, failures, cancel)', () => {
  let now = 1_000_000;
  const store = () => new VideoStore(7, () => now);
  const task = (s: VideoStore, extra: { prompt?: string; forceFail?: boolean; failureRate?: number } = {}) =>
    s.create({ id: `t${Math.random()}`, family: 'A', model: 'video-3.1', prompt: extra.prompt ?? 'a cat', generationMs: 1000, duration: 8, resolution: '720x1280', ...extra });

  it('waits for the first tenth, runs with progress rising to 99, then completes at 100', () => {
    const s = store();
    const t = task(s);
    expect(s.snapshot(t)).toEqual({ phase: 'waiting', progress: 0, remainingMs: 1000 });
    now += 99;
    expect(s.snapshot(t).phase).toBe('waiting');
    now += 1;
    expect(s.snapshot(t)).toEqual({ phase: 'running', progress: 10, remainingMs: 900 });
    now += 899;
    expect(s.snapshot(t)).toEqual({ phase: 'running', progress: 99, remainingMs: 1 });
    now += 1;
    expect(s.snapshot(t)).toEqual({ phase: 'completed', progress: 100, remainingMs: 0 });
  });

  it('fails at the end when forced or when the prompt has the word "fail"', () => {
    const s = store();
    const forced = task(s, { forceFail: true });
    const worded = task(s, { prompt: 'please FAIL now' });
    const fine = task(s, { prompt: 'a failsafe robot' });
    now += 1000;
    expect(s.snapshot(forced)).toMatchObject({ phase: 'failed', failure: { code: 'generation_failed' } });
    expect(s.snapshot(worded).phase).toBe('failed');
    expect(s.snapshot(fine).phase).toBe('completed');
  });

  it('draws failures from a seeded PRNG: the same seed repeats, the rate holds roughly', () => {
    const outcomes = (seed: number, rate: number) => {
      const s = new VideoStore(seed, () => 0);
      return Array.from({ length: 400 }, (_, i) => s.create({ id: `x${i}`, family: 'B', model: 'm', prompt: 'p', generationMs: 0, duration: 5, resolution: 'r', failureRate: rate }).failure !== undefined);
    };
    expect(outcomes(3, 0.3)).toEqual(outcomes(3, 0.3));
    expect(outcomes(3, 0.3)).not.toEqual(outcomes(4, 0.3));
    const failed = outcomes(3, 0.3).filter(Boolean).length;
    expect(failed).toBeGreaterThan(80);
    expect(failed).toBeLessThan(160);
    expect(outcomes(3, 0).some(Boolean)).toBe(false);
    expect(outcomes(3, 1).every(Boolean)).toBe(true);
  });

  it('cancels unfinished tasks only; a cancelled task reads failed/cancelled with its progress frozen', () => {
    const s = store();
    const t = task(s);
    now += 500;
    expect(s.cancel(t.id)).toBe(true);
    now += 5000;
    expect(s.snapshot(t)).toEqual({ phase: 'failed', progress: 50, remainingMs: 0, failure: { code: 'cancelled', message: 'The task was cancelled.' } });
    expect(s.cancel(t.id)).toBe(false);
    const done = task(s);
    now += 1000;
    expect(s.cancel(done.id)).toBe(false);
    expect(s.cancel('nope')).toBe(false);
  });
});

describe('fake MP4 and Range', () => {
  it('is a deterministic few-KB MP4 per id', () => {
    const a = fakeMp4('video_1');
    expect(a).toHaveLength(FAKE_MP4_BYTES);
    expect(a.toString('latin1', 4, 8)).toBe('ftyp');
    expect(a.toString('latin1', 28, 32)).toBe('mdat');
    expect(fakeMp4('video_1').equals(a)).toBe(true);
    expect(fakeMp4('video_2').equals(a)).toBe(false);
  });

  it.each<[string | undefined, ReturnType<typeof parseRange>]>([
    [undefined, undefined],
    ['bytes=0-99', { start: 0, end: 99 }],
    ['bytes=100-', { start: 100, end: 999 }],
    ['bytes=-100', { start: 900, end: 999 }],
    ['bytes=-5000', { start: 0, end: 999 }],
    ['bytes=900-5000', { start: 900, end: 999 }],
    ['bytes=999-999', { start: 999, end: 999 }],
    ['bytes=1000-', 'unsatisfiable'],
    ['bytes=-0', 'unsatisfiable'],
    ['bytes=5-2', undefined],
    ['bytes=0-1,5-6', undefined],
    ['items=0-1', undefined],
    ['bytes=-', undefined],
  ])('Range %s of 1000 bytes', (header, expected) => {
    expect(parseRange(header, 1000)).toEqual(expected);
  });
});

describe('upstream simulator: video families', () => {
  let sim: Simulator;
  const req = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const all: Record<string, string> = { authorization: `Bearer ${KEY}`, ...headers };
    if (body !== undefined) all['content-type'] = 'application/json';
    for (const k of Object.keys(all)) if (all[k] === '') delete all[k];
    return fetch(`${sim.url}${path}`, { method, headers: all, body: body === undefined ? undefined : JSON.stringify(body) });
  };
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => req('POST', path, body, headers);
  const get = (path: string, headers: Record<string, string> = {}) => req('GET', path, undefined, headers);
  const bBody = { model: 'vendorA-2.6-r2v', input: { prompt: 'image 1 waves', media: [{ type: 'reference_image', url: 'https://cdn.example.com/a.png' }] }, parameters: { ratio: '9:16', duration: 7 } };
  const bHeaders = { 'x-vendor-async': 'enable' };

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: KEY, videoGenerationMs: 300 });
  });
  afterAll(() => sim.close());
  afterEach(() => {
    sim.clearFaults();
    sim.setOptions({ videoGenerationMs: 300, videoFailureRate: 0 });
  });

  describe('family A', () => {
    it('submits queued, polls queued -> processing -> completed with retry-after while unfinished, and serves the content record', async () => {
      // A slow task stays queued (the first tenth of 60 s): the poll hint is the family's 5 s.
      const slow = await json(await post('/v1/videos', { model: 'video-3.1', prompt: 'slow' }, { 'x-sim-video-ms': '60000' }));
      const first = await get(`/v1/videos/${slow.id}`);
      expect(await json(first)).toMatchObject({ id: slow.id, object: 'video', status: 'queued', model: 'video-3.1', prompt: 'slow', progress: 0 });
      expect(first.headers.get('retry-after')).toBe('5');
      const early = await get(`/v1/videos/${slow.id}/content`);
      expect(early.status).toBe(409);
      expect(early.headers.get('retry-after')).toBe('5');
      expect((await json(early)).error).toMatchObject({ code: 'video_not_ready', type: 'invalid_request_error' });

      const res = await post('/v1/videos', { model: 'video-3.1-landscape', prompt: 'a cat surfing' }, { 'x-sim-video-ms': '1500' });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
      const created = await json(res);
      expect(created).toEqual({ id: expect.stringMatching(/^video_/), object: 'video', created: expect.any(Number), status: 'queued', model: 'video-3.1-landscape' });
      const { seen } = await pollStatuses(async () => json(await get(`/v1/videos/${created.id}`)), (b) => b.status, (st) => st === 'completed');
      expect(['queued,processing,completed', 'processing,completed']).toContain(seen.join(','));
      const done = await get(`/v1/videos/${created.id}`);
      expect(done.headers.get('retry-after')).toBeNull();
      expect(await json(done)).toMatchObject({ status: 'completed', progress: 100 });
      const content = await json(await get(`/v1/videos/${created.id}/content`));
      expect(content).toEqual({
        id: created.id,
        object: 'video',
        created: created.created,
        status: 'completed',
        model: 'video-3.1-landscape',
        prompt: 'a cat surfing',
        url: `${sim.url}/files/video/${created.id}.mp4`,
        duration: 8,
        resolution: '1280x720',
      });
      // The file: no credentials, the whole or a range.
      const file = await fetch(content.url);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toBe('video/mp4');
      expect(file.headers.get('accept-ranges')).toBe('bytes');
      expect(Buffer.from(await file.arrayBuffer()).equals(fakeMp4(created.id))).toBe(true);
      const part = await fetch(content.url, { headers: { range: 'bytes=100-199' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 100-199/${FAKE_MP4_BYTES}`);
      expect(Buffer.from(await part.arrayBuffer()).equals(fakeMp4(created.id).subarray(100, 200))).toBe(true);
      const tail = await fetch(content.url, { headers: { range: 'bytes=-10' } });
      expect(tail.status).toBe(206);
      expect((await tail.arrayBuffer()).byteLength).toBe(10);
      const beyond = await fetch(content.url, { headers: { range: `bytes=${FAKE_MP4_BYTES}-` } });
      expect(beyond.status).toBe(416);
      expect(beyond.headers.get('content-range')).toBe(`bytes */${FAKE_MP4_BYTES}`);
    });

    it('portrait models are 720x1280; the raw key form is accepted', async () => {
      const created = await json(await post('/v1/videos', { model: 'video-3.1-fast', prompt: 'x' }, { authorization: KEY, 'x-sim-video-ms': '0' }));
      expect(await json(await get(`/v1/videos/${created.id}/content`, { authorization: KEY }))).toMatchObject({ resolution: '720x1280', duration: 8 });
    });

    it('answers errors in its format: 401 authentication_error, invalid_model, invalid_prompt, video_not_found', async () => {
      const noKey = await post('/v1/videos', { model: 'video-3.1', prompt: 'x' }, { authorization: '' });
      expect(noKey.status).toBe(401);
      expect((await json(noKey)).error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
      const wrong = await post('/v1/videos', { model: 'vendorA-2.7-r2v', prompt: 'x' });
      expect(wrong.status).toBe(400);
      const wrongBody = await json(wrong);
      expect(wrongBody.error).toMatchObject({ code: 'invalid_model', param: 'model', type: 'invalid_request_error' });
      expect((await json(await post('/v1/videos', { model: 'video-3.1' }))).error).toMatchObject({ code: 'invalid_prompt', param: 'prompt' });
      const missing = await get('/v1/videos/video_nope');
      expect(missing.status).toBe(404);
      expect((await json(missing)).error.code).toBe('video_not_found');
      expect((await get('/v1/videos/video_nope/content')).status).toBe(404);
      expect((await fetch(`${sim.url}/files/video/video_nope.mp4`)).status).toBe(404);
    });

    it('DELETE cancels an unfinished task (then failed/cancelled) and refuses a finished one', async () => {
      const slow = await json(await post('/v1/videos', { model: 'video-3.1', prompt: 'x' }, { 'x-sim-video-ms': '60000' }));
      const del = await req('DELETE', `/v1/videos/${slow.id}`);
      expect(del.status).toBe(200);
      expect(await json(del)).toMatchObject({ id: slow.id, status: 'failed', error: { code: 'cancelled' } });
      expect(await json(await get(`/v1/videos/${slow.id}`))).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
      expect((await json(await get(`/v1/videos/${slow.id}/content`))).error.code).toBe('video_not_ready');
      const fast = await json(await post('/v1/videos', { model: 'video-3.1', prompt: 'x' }, { 'x-sim-video-ms': '0' }));
      const late = await req('DELETE', `/v1/videos/${fast.id}`);
      expect(late.status).toBe(409);
      expect((await json(late)).error.code).toBe('video_not_cancellable');
    });
  });

  describe('family B', () => {
    it('submits PENDING, polls submitted -> in_progress -> completed with result_url, duration, resolution', async () => {
      const res = await post(B_SUBMIT, bBody, { ...bHeaders, 'x-sim-video-ms': '60000' });
      expect(res.status).toBe(200);
      const slow = await json(res);
      expect(slow).toEqual({ output: { task_id: expect.any(String), task_status: 'PENDING' }, request_id: res.headers.get('x-request-id') });
      const first = await get(`/v1/tasks/${slow.output.task_id}`);
      expect(await json(first)).toEqual({ status: 'submitted', progress: 0, result_url: null, task_id: slow.output.task_id });
      expect(first.headers.get('retry-after')).toBe('10');

      const sub = await json(await post(B_SUBMIT, bBody, { ...bHeaders, 'x-sim-video-ms': '1500' }));
      const id = sub.output.task_id;
      const { seen } = await pollStatuses(async () => json(await get(`/v1/tasks/${id}`)), (b) => b.status, (st) => st === 'completed');
      expect(['submitted,in_progress,completed', 'in_progress,completed']).toContain(seen.join(','));
      const done = await get(`/v1/tasks/${id}`);
      expect(done.headers.get('retry-after')).toBeNull();
      const body = await json(done);
      expect(body).toEqual({ status: 'completed', progress: 100, result_url: `${sim.url}/files/video/${encodeURIComponent(id)}.mp4`, task_id: id, duration: 7, resolution: '1080x1920' });
      // Downloaded WITHOUT Authorization; with it, 403.
      expect((await fetch(body.result_url)).status).toBe(200);
      const withAuth = await fetch(body.result_url, { headers: { authorization: `Bearer ${KEY}` } });
      expect(withAuth.status).toBe(403);
      expect(await json(withAuth)).toMatchObject({ code: 'AccessDenied' });
    });

    it('a prompt with "fail" ends failed in the decided shape', async () => {
      const sub = await json(await post(B_SUBMIT, { ...bBody, input: { ...bBody.input, prompt: 'this should fail' } }, { ...bHeaders, 'x-sim-video-ms': '0' }));
      const poll = await json(await get(`/v1/tasks/${sub.output.task_id}`));
      expect(poll).toEqual({ status: 'failed', progress: 99, task_id: sub.output.task_id, result_url: null, error: { code: 'generation_failed', message: expect.any(String) } });
    });

    it('errors are {code, message, request_id}: async header, InvalidParameter, InvalidApiKey, TaskNotFound', async () => {
      const noAsync = await post(B_SUBMIT, bBody);
      expect(noAsync.status).toBe(400);
      expect(await json(noAsync)).toEqual({ code: 'InvalidParameter', message: expect.stringContaining('X-Vendor-Async'), request_id: noAsync.headers.get('x-request-id') });
      const bad = await post(B_SUBMIT, { ...bBody, parameters: { duration: 16 } }, bHeaders);
      expect(await json(bad)).toMatchObject({ code: 'InvalidParameter', message: expect.stringContaining('parameters.duration') });
      const noKey = await post(B_SUBMIT, bBody, { ...bHeaders, authorization: 'Bearer sk-wrong' });
      expect(noKey.status).toBe(401);
      expect(await json(noKey)).toEqual({ code: 'InvalidApiKey', message: expect.any(String), request_id: noKey.headers.get('x-request-id') });
      const missing = await get('/v1/tasks/task-nope');
      expect(missing.status).toBe(404);
      expect(await json(missing)).toMatchObject({ code: 'TaskNotFound' });
    });

    it('cancel: POST /v1/tasks/{id}/cancel while unfinished; refused after', async () => {
      const sub = await json(await post(B_SUBMIT, bBody, { ...bHeaders, 'x-sim-video-ms': '60000' }));
      const id = sub.output.task_id;
      const c = await post(`/v1/tasks/${id}/cancel`, undefined);
      expect(c.status).toBe(200);
      expect(await json(c)).toEqual({ request_id: c.headers.get('x-request-id') });
      expect(await json(await get(`/v1/tasks/${id}`))).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
      const again = await post(`/v1/tasks/${id}/cancel`, undefined);
      expect(again.status).toBe(400);
      expect(await json(again)).toMatchObject({ code: 'UnsupportedOperation' });
    });

    it('a status fault answers in the family B format with retry-after', async () => {
      sim.addFault({ kind: 'status', status: 429, path: '/v1/tasks/x', count: 1 });
      const r = await get('/v1/tasks/x');
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(await json(r)).toEqual({ code: 'Throttling', message: expect.any(String), request_id: r.headers.get('x-request-id') });
    });
  });

  describe('family C', () => {
    it('submits processing with a pollingUrl, completes with data.video_url', async () => {
      const sub = await json(await post(C_SUBMIT, { prompt: 'a dog', model: 'video3-pro' }, { 'x-sim-video-ms': '1000' }));
      expect(sub).toEqual({
        success: true,
        data: { taskId: expect.stringMatching(/^video3-pro:[0-9a-f-]{36}$/), pollingUrl: expect.any(String), status: 'processing', message: expect.any(String) },
      });
      const first = await get(new URL(sub.data.pollingUrl).pathname);
      expect(Number(first.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await json(first)).toMatchObject({ success: true, data: { taskId: sub.data.taskId, status: 'processing' } });
      const { seen } = await pollStatuses(async () => json(await get(new URL(sub.data.pollingUrl).pathname)), (b) => b.data.status, (st) => st === 'completed');
      expect(seen).toEqual(['processing', 'completed']);
      const done = await json(await get(new URL(sub.data.pollingUrl).pathname));
      expect(done).toEqual({
        success: true,
        data: { taskId: sub.data.taskId, status: 'completed', progress: 100, message: expect.any(String), video_url: `${sim.url}/files/video/${encodeURIComponent(sub.data.taskId)}.mp4`, duration: 8, resolution: '1920x1080' },
      });
      const file = await fetch(done.data.video_url, { headers: { range: 'bytes=0-3' } });
      expect(file.status).toBe(206);
      expect(Buffer.from(await file.arrayBuffer()).equals(fakeMp4(sub.data.taskId).subarray(0, 4))).toBe(true);
    });

    it('a registered video-fail fault fails the next submission only, and polls do not use it up', async () => {
      sim.addFault({ kind: 'video-fail', count: 1 });
      await get('/vendorB/v1/api/video/status/nope');
      const a = await json(await post(C_SUBMIT, { prompt: 'x' }, { 'x-sim-video-ms': '0' }));
      const b = await json(await post(C_SUBMIT, { prompt: 'x' }, { 'x-sim-video-ms': '0' }));
      expect((await json(await get(`/vendorB/v1/api/video/status/${a.data.taskId}`))).data).toMatchObject({ status: 'failed', error_code: 'generation_failed' });
      expect((await json(await get(`/vendorB/v1/api/video/status/${b.data.taskId}`))).data.status).toBe('completed');
      // The header form, per request.
      const h = await json(await post(C_SUBMIT, { prompt: 'x' }, { 'x-sim-video-ms': '0', 'x-sim-fault': 'video-fail' }));
      expect((await json(await get(`/vendorB/v1/api/video/status/${h.data.taskId}`))).data.status).toBe('failed');
    });

    it('errors are {success:false, message, error_code, details:{field, reason}}', async () => {
      const bad = await post(C_SUBMIT, { prompt: 'x', model: 'video9' });
      expect(bad.status).toBe(400);
      expect(await json(bad)).toEqual({ success: false, message: expect.stringContaining('model'), error_code: 'INVALID_MODEL', details: { field: 'model', reason: expect.stringContaining('video3') } });
      expect((await json(await post(C_SUBMIT, {}))).error_code).toBe('INVALID_PROMPT');
      const missing = await get('/vendorB/v1/api/video/status/video3:nope');
      expect(missing.status).toBe(404);
      expect(await json(missing)).toMatchObject({ success: false, error_code: 'TASK_NOT_FOUND' });
      const noKey = await post(C_SUBMIT, { prompt: 'x' }, { authorization: '' });
      expect(noKey.status).toBe(401);
      expect(await json(noKey)).toMatchObject({ success: false, error_code: 'INVALID_API_KEY' });
    });

    it('cancel: POST /vendorB/v1/api/video/cancel/{taskId}', async () => {
      const sub = await json(await post(C_SUBMIT, { prompt: 'x' }, { 'x-sim-video-ms': '60000' }));
      const c = await json(await post(`/vendorB/v1/api/video/cancel/${sub.data.taskId}`, undefined));
      expect(c).toMatchObject({ success: true, data: { taskId: sub.data.taskId, status: 'failed', error_code: 'cancelled' } });
      const again = await post(`/vendorB/v1/api/video/cancel/${sub.data.taskId}`, undefined);
      expect(again.status).toBe(400);
    });
  });

  it('videoFailureRate 1 fails every task; tasks of one family are unknown to the others', async () => {
    sim.setOptions({ videoFailureRate: 1, videoGenerationMs: 0 });
    const a = await json(await post('/v1/videos', { model: 'video-3.1', prompt: 'x' }));
    expect(await json(await get(`/v1/videos/${a.id}`))).toMatchObject({ status: 'failed', error: { code: 'generation_failed' } });
    expect((await get(`/v1/tasks/${a.id}`)).status).toBe(404);
    expect(() => sim.setOptions({ videoFailureRate: 1.5 })).toThrow(/videoFailureRate/);
    expect(() => sim.setOptions({ videoGenerationMs: -1 })).toThrow(/videoGenerationMs/);
  });

  it('records video requests like the others', async () => {
    sim.resetRecords();
    await post('/v1/videos', { model: 'video-3.1', prompt: 'recorded' });
    expect(sim.requests).toEqual([expect.objectContaining({ method: 'POST', path: '/v1/videos', body: { model: 'video-3.1', prompt: 'recorded' }, headers: expect.objectContaining({ authorization: `Bearer ${KEY}` }) })]);
  });
});
