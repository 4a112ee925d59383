// test modes: postgres, embedded
import OpenAI, { toFile } from 'openai';
import { fakeMp4 } from '../../src/simulator/video-store';
import { newKey } from '../helpers/relay-fixture';
import { waitFor } from '../helpers/wait';
import { startVideoFixture, type VideoFixture } from '../helpers/video-fixture';

/**
 * The official OpenAI client's video calls against family A: `client.videos.create` sends multipart/form-data
 * (model, prompt, seconds, size, an optional input_reference file), `retrieve` polls, `downloadContent` fetches the
 * bytes (Accept: application/binary). Channels of type video-a (our family A) and openai-video (OpenAI's own API,
 * the simulator's /openai) behind it.
 */
const YAML = `channels:
  - {name: va, type: video-a, base_url: http://127.0.0.1:9100, key: "\${VIDEO_KEY}", models: [video-3.1, video-3.1-fl]}
  - name: oa
    type: openai-video
    base_url: http://127.0.0.1:9100/openai
    key: "\${VIDEO_KEY}"
    models: [video-3.1-landscape-fl]
    model_mapping: {video-3.1-landscape-fl: sora-2}
models:
  video-3.1: {per_unit: 0.5}
  video-3.1-fl: {per_unit: 0.5}
  video-3.1-landscape-fl: {per_second: 0.1}
`;

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
type ApiError = InstanceType<typeof OpenAI.APIError>;

describe('video family A through the openai npm client', () => {
  let fx: VideoFixture;
  beforeAll(async () => {
    fx = await startVideoFixture({ yaml: YAML });
  });
  afterAll(async () => {
    await fx?.close();
  });

  const clientOf = (key: string) => new OpenAI({ apiKey: key, baseURL: `${fx.gw.baseUrl}/v1`, maxRetries: 0 });

  async function untilDone(client: OpenAI, id: string) {
    let done = await client.videos.retrieve(id);
    for (let i = 0; i < 300 && done.status !== 'completed' && done.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      done = await client.videos.retrieve(id);
    }
    return done;
  }

  const upstreamId = async (id: string) => (await fx.gw.db.query('SELECT upstream_id FROM video_tasks WHERE id = $1', [id])).rows[0].upstream_id as string;

  it('creates with a multipart form, polls to completed, downloads the bytes, and the task is billed once', async () => {
    const { key } = await newKey(fx.gw);
    const client = clientOf(key);
    const created = await client.videos.create({ model: 'video-3.1' as never, prompt: 'a lighthouse at dusk', seconds: '8', size: '720x1280' });
    expect(created).toMatchObject({ id: expect.stringMatching(/^video_[0-9a-f]{32}$/), object: 'video', status: 'queued', model: 'video-3.1' });
    const done = await untilDone(client, created.id);
    expect(done).toMatchObject({ id: created.id, status: 'completed', prompt: 'a lighthouse at dusk' });
    const rows = await fx.gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE task_id = $1', [created.id]);
    expect(rows.rows[0].n).toBe(1);

    const download = await client.videos.downloadContent(created.id);
    expect(download.headers.get('content-type')).toBe('video/mp4');
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(bytes.equals(fakeMp4(await upstreamId(created.id)))).toBe(true);
    // The same read without the binary Accept is the contract's JSON record.
    const json = await fetch(`${fx.gw.baseUrl}/v1/videos/${created.id}/content`, { headers: { authorization: `Bearer ${key}` } });
    expect(await json.json()).toMatchObject({ id: created.id, status: 'completed', url: expect.stringContaining('/v1/files/video/') });
  });

  it('a first frame (input_reference) reaches a video-a upstream as a data URL; the stored frame is dropped at the end', async () => {
    const { key } = await newKey(fx.gw);
    const client = clientOf(key);
    const created = await client.videos.create({ model: 'video-3.1-fl' as never, prompt: 'from this frame', input_reference: await toFile(PNG, 'frame.png', { type: 'image/png' }) });
    expect((await untilDone(client, created.id)).status).toBe('completed');
    const submit = fx.sim.requests.find((r) => r.method === 'POST' && r.path === '/v1/videos' && (r.body as { prompt?: string })?.prompt === 'from this frame');
    expect((submit!.body as { input_reference: string }).input_reference).toBe(`data:image/png;base64,${PNG.toString('base64')}`);
    const row = (await fx.gw.db.query('SELECT input_key, input_type, input_name FROM video_tasks WHERE id = $1', [created.id])).rows[0];
    expect(row).toEqual({ input_key: `inputs/${created.id}`, input_type: 'image/png', input_name: 'frame.png' });
    // The frame is deleted just after the task's end commits: a client may read `completed` a moment before.
    await waitFor(
      async () => {
        const frame = await fx.gw.services.videoStore.get(row.input_key);
        frame?.destroy();
        return frame === null;
      },
      { message: 'the stored frame to be deleted' },
    );
  });

  it('an openai-video channel: multipart upstream with the frame, in_progress mapped, bytes fetched with the channel key, billed by seconds', async () => {
    const { key, record } = await newKey(fx.gw);
    const client = clientOf(key);
    // The worker writes progress once a second (progress-writer.ts): with the fixture's 1,200 ms generation the
    // upstream could finish before a write showed `processing`. 4 s of generation leaves a few writes inside it.
    fx.sim.setOptions({ videoGenerationMs: 4000 });
    const submitAndWatch = async () => {
      const created = await client.videos.create({
        model: 'video-3.1-landscape-fl' as never,
        prompt: 'a glacier, slowly',
        seconds: '8',
        size: '1280x720',
        input_reference: await toFile(PNG, 'first.png', { type: 'image/png' }),
      });
      let sawProcessing = false;
      let done = await client.videos.retrieve(created.id);
      for (let i = 0; i < 300 && done.status !== 'completed' && done.status !== 'failed'; i++) {
        if ((done.status as string) === 'processing') sawProcessing = true;
        await new Promise((r) => setTimeout(r, 50));
        done = await client.videos.retrieve(created.id);
      }
      return { created, done, sawProcessing };
    };
    const { created, done, sawProcessing } = await submitAndWatch().finally(() => fx.sim.setOptions({ videoGenerationMs: 1200 }));
    expect(done.status).toBe('completed');
    expect(sawProcessing).toBe(true);

    const submit = fx.sim.requests.find((r) => r.method === 'POST' && r.path === '/openai/v1/videos');
    expect(submit!.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(submit!.body).toEqual({
      fields: { model: 'sora-2', prompt: 'a glacier, slowly', seconds: '8', size: '1280x720' },
      files: [{ name: 'input_reference', filename: 'first.png', contentType: 'image/png', size: PNG.length }],
    });
    const fetches = fx.sim.requests.filter((r) => r.path.startsWith('/openai/v1/videos/') && r.path.endsWith('/content'));
    expect(fetches.length).toBeGreaterThan(0);
    for (const f of fetches) expect(f.headers.authorization).toBe(`Bearer ${process.env.VIDEO_KEY ?? 'video-upstream-key-0123456789'}`);

    // 8 s at 0.1 USD a second.
    const ledger = await fx.gw.db.query('SELECT quota::int AS quota FROM ledger WHERE task_id = $1', [created.id]);
    expect(ledger.rows).toEqual([{ quota: 400_000 }]);
    expect(record.id).toBeGreaterThan(0);

    // Served from our copy, also after the upstream's file is gone.
    fx.sim.deleteVideoFiles();
    const bytes = Buffer.from(await (await client.videos.downloadContent(created.id)).arrayBuffer());
    expect(bytes.equals(fakeMp4(await upstreamId(created.id)))).toBe(true);
  });

  it('refuses, in family A\'s error format: a form the JSON body would be refused for, a frame for a model without -fl, a frame that is not an image', async () => {
    const { key } = await newKey(fx.gw);
    const client = clientOf(key);
    const noPrompt = await client.videos.create({ model: 'video-3.1' as never } as never).catch((e: unknown) => e as ApiError);
    expect(noPrompt).toBeInstanceOf(OpenAI.APIError);
    expect((noPrompt as ApiError).status).toBe(400);
    const notFl = await client.videos
      .create({ model: 'video-3.1' as never, prompt: 'refused frame', input_reference: await toFile(PNG, 'frame.png', { type: 'image/png' }) })
      .catch((e: unknown) => e as ApiError);
    expect((notFl as ApiError).status).toBe(400);
    expect((notFl as ApiError).error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/^input_reference: .*-fl/), type: 'invalid_request_error' });
    const notImage = await client.videos
      .create({ model: 'video-3.1-fl' as never, prompt: 'refused frame', input_reference: await toFile(Buffer.from('hello'), 'notes.txt', { type: 'text/plain' }) })
      .catch((e: unknown) => e as ApiError);
    expect((notImage as ApiError).status).toBe(400);
    expect((notImage as ApiError).error).toMatchObject({ code: 'invalid_image_file', message: expect.stringMatching(/^input_reference: /) });
    const badSeconds = await client.videos.create({ model: 'video-3.1' as never, prompt: 'refused frame', seconds: '99' as never }).catch((e: unknown) => e as ApiError);
    expect((badSeconds as ApiError).status).toBe(400);
    // Nothing was held, created or stored for any of them.
    const tasks = await fx.gw.db.query("SELECT count(*)::int AS n FROM video_tasks WHERE prompt = 'refused frame'");
    expect(tasks.rows[0].n).toBe(0);
  });
});
