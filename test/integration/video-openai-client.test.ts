import OpenAI, { toFile } from 'openai';
import { newKey } from '../helpers/relay-fixture';
import { startVideoFixture, type VideoFixture } from '../helpers/video-fixture';

/**
 * The official OpenAI client's video calls against family A: `client.videos.create` sends multipart/form-data
 * (model, prompt, seconds, size), `client.videos.retrieve` polls. The form is validated as the JSON body is.
 */
describe('video family A through the openai npm client', () => {
  let fx: VideoFixture;
  beforeAll(async () => {
    fx = await startVideoFixture();
  });
  afterAll(async () => {
    await fx?.close();
  });

  it('creates with a multipart form, polls to completed, and the task is billed once', async () => {
    const { key } = await newKey(fx.gw);
    const client = new OpenAI({ apiKey: key, baseURL: `${fx.gw.baseUrl}/v1`, maxRetries: 0 });
    const created = await client.videos.create({ model: 'video-3.1' as never, prompt: 'a lighthouse at dusk', seconds: '8', size: '720x1280' });
    expect(created).toMatchObject({ id: expect.stringMatching(/^video_[0-9a-f]{32}$/), object: 'video', status: 'queued', model: 'video-3.1' });
    // The client's own poll: GET /v1/videos/{id}.
    let done = await client.videos.retrieve(created.id);
    for (let i = 0; i < 300 && done.status !== 'completed' && done.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      done = await client.videos.retrieve(created.id);
    }
    expect(done).toMatchObject({ id: created.id, status: 'completed', prompt: 'a lighthouse at dusk' });
    const rows = await fx.gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE task_id = $1', [created.id]);
    expect(rows.rows[0].n).toBe(1);
  });

  it('refuses a form the JSON body would be refused for, and an input_reference file, in family A\'s error format', async () => {
    const { key } = await newKey(fx.gw);
    const client = new OpenAI({ apiKey: key, baseURL: `${fx.gw.baseUrl}/v1`, maxRetries: 0 });
    const noPrompt = await client.videos.create({ model: 'video-3.1' as never } as never).catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(noPrompt).toBeInstanceOf(OpenAI.APIError);
    expect((noPrompt as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
    const withFrame = await client.videos
      .create({ model: 'video-3.1-fl' as never, prompt: 'from this frame', input_reference: await toFile(png, 'frame.png', { type: 'image/png' }) })
      .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect((withFrame as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(JSON.stringify((withFrame as InstanceType<typeof OpenAI.APIError>).error)).toContain('input_reference');
    // Nothing was held or created for either.
    const tasks = await fx.gw.db.query("SELECT count(*)::int AS n FROM video_tasks WHERE prompt = 'from this frame'");
    expect(tasks.rows[0].n).toBe(0);
  });
});
