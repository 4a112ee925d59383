import { startSimulator, type Simulator } from '../../src/simulator';
import { videoAdapterOf } from '../../src/upstream/video';
import type { ChannelConfig } from '../../src/gateway-config/schema';

/**
 * A video submit carries the task id as `Idempotency-Key`: an upstream that honours it (the simulator does, as an
 * upstream that supports idempotency keys) answers a submit repeated after a crash with the task it started, so a
 * crash between the upstream's answer and the gateway's record of it never starts a second generation.
 */
describe('video submits are idempotent upstream by the task id', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'k', maxRecords: 100 });
  });
  afterAll(async () => sim?.close());

  const channel = (type: ChannelConfig['type']): ChannelConfig => ({
    name: type, type, base_url: type === 'openai-video' ? `${sim.url}/openai` : sim.url, key: 'k', models: ['m'], priority: 0, weight: 1, groups: ['default'],
    model_mapping: {}, timeout_ms: 5000, responses_api: false, batch_api: false, headers: {},
  });
  const REQUESTS: Record<string, Record<string, unknown>> = {
    'video-a': { model: 'video-3.1', prompt: 'a wave' },
    'video-b': { model: 'vendorA-2.7-r2v', input: { prompt: 'a wave' }, parameters: { duration: 5 } },
    'video-c': { prompt: 'a wave' },
    'openai-video': { model: 'sora-2', prompt: 'a wave', seconds: '4', size: '720x1280' },
  };

  it.each(Object.keys(REQUESTS) as ChannelConfig['type'][])('%s: the same key twice is one upstream task; another key is another', async (type) => {
    const adapter = videoAdapterOf(type)!;
    const signal = new AbortController().signal;
    const first = await adapter.submit(channel(type), REQUESTS[type], signal, undefined, `video:${type}-1`);
    const again = await adapter.submit(channel(type), REQUESTS[type], signal, undefined, `video:${type}-1`);
    const other = await adapter.submit(channel(type), REQUESTS[type], signal, undefined, `video:${type}-2`);
    expect(again).toBe(first);
    expect(other).not.toBe(first);
    expect(sim.requests.filter((r) => r.method === 'POST').at(-1)!.headers['idempotency-key']).toBe(`video:${type}-2`);
  });
});
