import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fakeMp4 } from '../../src/simulator/video-store';
import { buildGoClient, runGoClient } from '../helpers/go-client';
import { newKey } from '../helpers/relay-fixture';
import { startVideoFixture, type VideoFixture } from '../helpers/video-fixture';

/**
 * The official Go client (github.com/openai/openai-go/v3, test/clients/openai-go) creates, polls and downloads a
 * video through the gateway, as a pipeline written in Go would: multipart create (with a first frame for an -fl
 * model), `Videos.Get` until completed, `Videos.DownloadContent` for the bytes.
 */
const YAML = `channels:
  - {name: va, type: video-a, base_url: http://127.0.0.1:9100, key: "\${VIDEO_KEY}", models: [video-3.1, video-3.1-fl]}
models:
  video-3.1: {per_unit: 0.5}
  video-3.1-fl: {per_unit: 0.5}
`;

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

describe('video family A through the openai-go client', () => {
  let fx: VideoFixture;
  let bin: string;
  let dir: string;
  beforeAll(async () => {
    bin = await buildGoClient(path.resolve(__dirname, '../clients/openai-go'));
    fx = await startVideoFixture({ yaml: YAML });
    dir = mkdtempSync(path.join(os.tmpdir(), 'openai-go-'));
  }, 600_000);
  afterAll(async () => {
    await fx?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const upstreamBytes = async (id: string) => {
    const up = (await fx.gw.db.query('SELECT upstream_id FROM video_tasks WHERE id = $1', [id])).rows[0].upstream_id as string;
    return fakeMp4(up);
  };
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  it('creates, polls to completed and downloads the bytes; billed once', async () => {
    const { key } = await newKey(fx.gw);
    const out = await runGoClient(bin, { GATEWAY_URL: `${fx.gw.baseUrl}/v1`, API_KEY: key, MODEL: 'video-3.1' });
    expect(out).toMatchObject({ id: expect.stringMatching(/^video_[0-9a-f]{32}$/), created_status: 'queued', status: 'completed', bytes: 4096, content_type: 'video/mp4' });
    expect(out.polls).toBeGreaterThan(0);
    const id = out.id as string;
    expect(out.sha256).toBe(sha(await upstreamBytes(id)));
    const ledger = await fx.gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE task_id = $1', [id]);
    expect(ledger.rows[0].n).toBe(1);
    const row = (await fx.gw.db.query('SELECT request FROM video_tasks WHERE id = $1', [id])).rows[0];
    expect(row.request).toMatchObject({ model: 'video-3.1', seconds: 8, size: '720x1280' });
  });

  it('sends a first frame for an -fl model; the download still works after the upstream deleted its file', async () => {
    const { key } = await newKey(fx.gw);
    const frame = path.join(dir, 'frame.png');
    writeFileSync(frame, PNG);
    const out = await runGoClient(bin, { GATEWAY_URL: `${fx.gw.baseUrl}/v1`, API_KEY: key, MODEL: 'video-3.1-fl', FRAME: frame });
    expect(out).toMatchObject({ status: 'completed', bytes: 4096 });
    const id = out.id as string;
    const submit = fx.sim.requests.find((r) => r.method === 'POST' && r.path === '/v1/videos' && typeof (r.body as { input_reference?: unknown })?.input_reference === 'string');
    expect((submit!.body as { input_reference: string }).input_reference).toBe(`data:image/png;base64,${PNG.toString('base64')}`);

    fx.sim.deleteVideoFiles();
    const content = await fetch(`${fx.gw.baseUrl}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${key}`, accept: 'application/binary' } });
    expect(content.status).toBe(200);
    expect(sha(Buffer.from(await content.arrayBuffer()))).toBe(sha(await upstreamBytes(id)));
  });
});
