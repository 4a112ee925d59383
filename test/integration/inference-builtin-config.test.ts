// test modes: postgres, embedded
import { MODEL_CREATED } from '../../src/domain/catalog';
import { SIMULATOR_MODELS } from '../../src/simulator/catalog';
import { http, newAccount, startGateway, TestGateway, testGatewayConfig } from '../helpers/harness';

/**
 * Without GATEWAY_CONFIG the built-in config serves: the upstream simulator, started in the gateway's process
 * on a loopback port, as channels `simulator` and `simulator-anthropic`, with a price for every model, so a
 * fresh install answers and meters at once. With a config, only its channels serve (no simulator).
 */
describe('inference: the built-in simulator config', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  it('serves every simulator model, each priced and owned by its provider, from an in-process simulator', async () => {
    expect(gw.simulator).not.toBeNull();
    const sim = gw.simulator!;
    expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const config = gw.deps.config.current();
    expect(config.source).toBe('built-in');
    expect(config.channels.map((c) => [c.name, c.type, c.base_url])).toEqual([
      ['simulator', 'openai', `${sim.url}/v1`],
      ['simulator-anthropic', 'anthropic', `${sim.url}/v1`],
      // The Gemini API, Cohere's and the video families' are rooted at the host, Jina's at /v1.
      ['simulator-gemini', 'gemini', sim.url],
      // Cohere's API is rooted at the host, Jina's at /v1.
      ['simulator-cohere', 'cohere', sim.url],
      ['simulator-jina', 'jina', `${sim.url}/v1`],
      // The video families' upstream contracts are rooted at the simulator itself.
      ['simulator-video-a', 'video-a', sim.url],
      ['simulator-video-b', 'video-b', sim.url],
      ['simulator-video-c', 'video-c', sim.url],
    ]);
    expect(config.warnings).toEqual([]);
    for (const m of SIMULATOR_MODELS) expect(config.models[m.id]).toBeDefined();

    const acct = await newAccount(gw.db);
    const record = await gw.deps.tokens.create(acct.id, { remain_quota: 1 });
    const { status, body } = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer sk-${record.key}` });
    expect(status).toBe(200);
    const expected = [...SIMULATOR_MODELS].sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(body.data).toEqual(expected.map((m) => ({ id: m.id, object: 'model', created: MODEL_CREATED, owned_by: m.owned_by })));

    // The channel's base URL is a live upstream.
    const upstream = await fetch(`${sim.url}/v1/models`, { headers: { authorization: 'Bearer simulator' } });
    expect(upstream.status).toBe(200);
  });

  it('answers speech, transcription, rerank (Cohere, Jina and BGE models) and moderation at once, each billed', async () => {
    const acct = await newAccount(gw.db);
    const record = await gw.deps.tokens.create(acct.id, { remain_quota: 10_000_000 });
    const auth = `Bearer sk-${record.key}`;
    const speech = await fetch(`${gw.baseUrl}/v1/audio/speech`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'hello' }) });
    expect([speech.status, speech.headers.get('content-type')]).toEqual([200, 'audio/mpeg']);
    expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(0);
    const form = new FormData();
    form.append('model', 'whisper-1');
    form.append('file', new Blob([new Uint8Array(Buffer.alloc(32_000, 1))]), 'clip.mp3');
    const transcript = await fetch(`${gw.baseUrl}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: auth }, body: form });
    expect(transcript.status).toBe(200);
    expect(typeof (await transcript.json()).text).toBe('string');
    for (const model of ['rerank-v3.5', 'jina-reranker-v2-base-multilingual', 'bge-reranker-v2-m3']) {
      const r = await http(gw.baseUrl, 'POST', '/v1/rerank', { auth, body: { model, query: 'gateway', documents: ['a gateway', 'a cat'] } });
      expect([model, r.status, r.body.results[0].index]).toEqual([model, 200, 0]);
    }
    const moderation = await http(gw.baseUrl, 'POST', '/v1/moderations', { auth, body: { input: 'hello' } });
    expect(moderation.status).toBe(200);
    const ledger = await gw.db.query('SELECT model, unit, units FROM ledger WHERE token_id = $1 ORDER BY id', [record.id]);
    expect(ledger.rows.map((r) => [r.model, r.unit])).toEqual([
      ['tts-1', 'characters'],
      ['whisper-1', 'milliseconds'],
      ['rerank-v3.5', 'search_units'],
      ['jina-reranker-v2-base-multilingual', ''],
      ['bge-reranker-v2-m3', ''],
      ['omni-moderation-latest', ''],
    ]);
  });

  it('starts no simulator when a config is given, and serves only its channels', async () => {
    const own = await startGateway({
      config: testGatewayConfig({
        channels: [{ name: 'mine', type: 'openai', base_url: 'https://upstream.invalid', models: ['m'] }],
        models: { m: { per_unit: 0.01 } },
      }),
    });
    try {
      expect(own.simulator).toBeNull();
      const acct = await newAccount(own.db);
      const record = await own.deps.tokens.create(acct.id, { remain_quota: 1 });
      const { body } = await http(own.baseUrl, 'GET', '/v1/models', { auth: `Bearer sk-${record.key}` });
      expect(body.data.map((m: { id: string }) => m.id)).toEqual(['m']);
    } finally {
      await own.close();
    }
  });
});
