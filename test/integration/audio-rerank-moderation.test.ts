// test modes: postgres, embedded
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI, { toFile } from 'openai';
import { ConfigStore } from '../../src/gateway-config/store';
import { validateGatewayConfig } from '../../src/gateway-config/schema';
import { startSimulator, type Simulator } from '../../src/simulator';
import { wavHeader } from '../../src/simulator/audio-formats';
import { http, startGateway, type TestGateway } from '../helpers/harness';
import { holdsOf, ledgerOf, newKey, tokenRow } from '../helpers/relay-fixture';

/**
 * Speech, transcription, translation, rerank and moderation through the gateway with the official openai client
 * (fetch for rerank), relayed to the upstream simulator byte for byte, billed by each price's own unit. Credits are
 * computed here from the prices below, independently of src/domain/pricing.
 */
const PRICES = {
  'tts-1': { input_characters_per_1m: '15' },
  'gpt-4o-mini-tts': { input_per_1m: '0.6', audio_output_per_1m: '12', input_characters_per_1m: '15' },
  'whisper-1': { per_minute: '0.006' },
  'gpt-4o-transcribe': { input_per_1m: '2.5', audio_input_per_1m: '6', output_per_1m: '10', per_minute: '0.006' },
  'rerank-v3.5': { per_search_unit: '0.002' },
  'jina-reranker-v2-base-multilingual': { input_per_1m: '0.02', kind: 'rerank' as const },
  'bge-reranker-v2-m3': { input_per_1m: '0.01', kind: 'rerank' as const },
  'text-moderation-latest': { input_per_1m: '0.01', kind: 'moderation' as const },
};
const OPENAI_MODELS = ['tts-1', 'gpt-4o-mini-tts', 'whisper-1', 'gpt-4o-transcribe', 'bge-reranker-v2-m3', 'text-moderation-latest', 'omni-moderation-latest'];

/** tts-1: 15 USD per 1M characters = 7.5 credits a character. */
const speechCredits = (chars: number) => Math.ceil((chars * 15) / 2);
/** whisper-1: 0.006 USD a minute = 3,000 credits a minute = 0.05 credits a millisecond. */
const minuteCredits = (ms: number) => Math.ceil(ms / 20);

/** A WAV of `seconds` of silence (24 kHz mono 16-bit): its header says how long it plays. */
function wav(seconds: number): Buffer {
  const data = Buffer.alloc(Math.round(seconds * 24000) * 2, 7);
  return Buffer.concat([wavHeader(data.length), data]);
}

describe('audio, rerank and moderations through the gateway', () => {
  let sim: Simulator;
  let backup: Simulator;
  let gw: TestGateway;
  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'key-sim' });
    backup = await startSimulator({ apiKey: 'key-backup' });
    const r = validateGatewayConfig(
      {
        channels: [
          { name: 'primary', type: 'openai', base_url: `${sim.url}/v1`, key: 'key-sim', models: OPENAI_MODELS, priority: 10 },
          { name: 'backup', type: 'openai', base_url: `${backup.url}/v1`, key: 'key-backup', models: OPENAI_MODELS, priority: 0 },
          { name: 'cohere', type: 'cohere', base_url: sim.url, key: 'key-sim', models: ['rerank-v3.5'] },
          { name: 'jina', type: 'jina', base_url: `${sim.url}/v1`, key: 'key-sim', models: ['jina-reranker-v2-base-multilingual'] },
        ],
        models: PRICES,
      },
      'test',
    );
    if (!r.ok) throw new Error(r.problems.join('\n'));
    gw = await startGateway({ config: ConfigStore.fixed(r.config) });
  });
  afterAll(async () => {
    await gw.close();
    await sim.close();
    await backup.close();
  });
  afterEach(() => {
    sim.clearFaults();
    backup.clearFaults();
  });

  /** The simulator's own answer to the same request: what the client must get byte for byte. */
  const direct = (path: string, body: unknown) =>
    fetch(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer key-sim' }, body: JSON.stringify(body) });
  const directForm = (path: string, fields: Record<string, string>, file: Buffer) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    form.append('file', new Blob([new Uint8Array(file)], { type: 'audio/wav' }), 'clip.wav');
    return fetch(`${sim.url}${path}`, { method: 'POST', headers: { authorization: 'Bearer key-sim' }, body: form });
  };

  describe('speech', () => {
    it.each(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const)('%s: the upstream bytes and Content-Type, billed per character', async (format) => {
      const { client, record } = await newKey(gw);
      const input = `Héllo wörld, ${format} 🎉 from the gateway.`;
      const res = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input, response_format: format }).asResponse();
      const got = Buffer.from(await res.arrayBuffer());
      const want = await direct('/v1/audio/speech', { model: 'tts-1', voice: 'alloy', input, response_format: format });
      expect(res.headers.get('content-type')).toBe(want.headers.get('content-type'));
      expect(got.equals(Buffer.from(await want.arrayBuffer()))).toBe(true);
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);

      const chars = [...input].length;
      const rows = await ledgerOf(gw, record.id);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ model: 'tts-1', unit: 'characters', units: chars, is_stream: true, channel: 'primary', quota: speechCredits(chars) });
      expect((await tokenRow(gw, record.id)).used_quota).toBe(speechCredits(chars));
      expect(await holdsOf(gw, record.id)).toBe(0);
    });

    it('the audio reaches the client as the upstream sends it, not after the whole file', async () => {
      const { client } = await newKey(gw);
      sim.setOptions({ chunkDelayMs: 150, streamChunks: 6 });
      try {
        const started = Date.now();
        const res = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'A slow upstream, six chunks apart.', response_format: 'mp3' }).asResponse();
        const reader = res.body!.getReader();
        const first = await reader.read();
        const firstAt = Date.now() - started;
        expect(first.value!.length).toBeGreaterThan(0);
        while (!(await reader.read()).done);
        // Six chunks 150 ms apart: the first arrives long before the last was sent.
        expect(Date.now() - started - firstAt).toBeGreaterThan(500);
      } finally {
        sim.setOptions({ chunkDelayMs: 0, streamChunks: 5 });
      }
    });

    it('GET /api/log/ shows the unit and the quantity billed', async () => {
      const { client, acct } = await newKey(gw);
      await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'twelve chars' });
      const log = await http(gw.baseUrl, 'GET', '/api/log/?p=1&page_size=10', { auth: acct.systemToken });
      expect(log.body.data[0]).toMatchObject({ model_name: 'tts-1', unit: 'characters', units: 12, quota: speechCredits(12), is_stream: true });
    });

    it('stream_format sse: the events passed through, billed from the usage of speech.audio.done', async () => {
      const { client, record } = await newKey(gw);
      const res = await client.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'Streamed speech, please.', stream_format: 'sse' }).asResponse();
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = (await res.text()).split('\n\n').filter((b) => b.trim()).map((b) => JSON.parse(b.replace(/^data: /, '')));
      expect(events.slice(0, -1).every((e) => e.type === 'speech.audio.delta')).toBe(true);
      const done = events[events.length - 1];
      expect(done.type).toBe('speech.audio.done');
      const { input_tokens: i, output_tokens: o } = done.usage;
      const rows = await ledgerOf(gw, record.id);
      // 0.6 USD per 1M text tokens and 12 per 1M audio tokens: (0.6 i + 12 o) / 2 credits.
      expect(rows[0]).toMatchObject({ unit: '', prompt_tokens: i, completion_tokens: o, audio_output_tokens: o, is_stream: true, quota: Math.ceil((0.6 * i + 12 * o) / 2) });
    });

    it('an upstream error before the first byte fails over; bad input is a 400 in the OpenAI format', async () => {
      const { client, key, record } = await newKey(gw);
      sim.addFault({ kind: 'status', status: 500, path: '/audio/speech', count: 1 });
      const res = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'failover' }).asResponse();
      expect(res.status).toBe(200);
      expect((await ledgerOf(gw, record.id))[0]).toMatchObject({ channel: 'backup', units: 8 });

      const bad = await http(gw.baseUrl, 'POST', '/v1/audio/speech', { auth: `Bearer ${key}`, body: { model: 'tts-1', voice: 'alloy', input: 'x'.repeat(4097) } });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ param: 'input' });
      expect(bad.headers.get('x-request-id')).toMatch(/^req_/);
    });
  });

  describe('transcriptions and translations', () => {
    const clip = wav(12.5);
    it.each(['json', 'text', 'srt', 'verbose_json', 'vtt'] as const)('%s: the upstream body and Content-Type, billed to the millisecond', async (format) => {
      const { client, record } = await newKey(gw);
      const res = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(clip, 'clip.wav', { type: 'audio/wav' }), response_format: format }).asResponse();
      expect(res.status).toBe(200);
      const want = await directForm('/v1/audio/transcriptions', { model: 'whisper-1', response_format: format }, clip);
      expect(res.headers.get('content-type')).toBe(want.headers.get('content-type'));
      expect(await res.text()).toBe(await want.text());
      // json reports whole seconds (usage.seconds: 13); verbose_json the exact duration; the others nothing, so the
      // WAV header's 12.5 s: 12,500 milliseconds, not a started minute.
      const ms = format === 'json' ? 13_000 : 12_500;
      expect((await ledgerOf(gw, record.id))[0]).toMatchObject({ model: 'whisper-1', unit: 'milliseconds', units: ms, is_stream: false, quota: minuteCredits(ms) });
    });

    it('stream: transcript.text.delta / done passed through, billed from the tokens of done', async () => {
      const { client, record } = await newKey(gw);
      const stream = await client.audio.transcriptions.create({ model: 'gpt-4o-transcribe', file: await toFile(clip, 'clip.wav'), stream: true });
      const events: any[] = [];
      for await (const ev of stream) events.push(ev);
      expect(events.slice(0, -1).every((e) => e.type === 'transcript.text.delta')).toBe(true);
      const done = events[events.length - 1];
      expect(done.type).toBe('transcript.text.done');
      const u = done.usage;
      const audio = u.input_token_details.audio_tokens;
      const text = u.input_tokens - audio;
      // 2.5 per 1M text input, 6 per 1M audio input, 10 per 1M output: (2.5 t + 6 a + 10 o) / 2 credits.
      expect((await ledgerOf(gw, record.id))[0]).toMatchObject({ is_stream: true, audio_input_tokens: audio, completion_tokens: u.output_tokens, quota: Math.ceil((2.5 * text + 6 * audio + 10 * u.output_tokens) / 2) });
    });

    it.each(['text', 'srt', 'verbose_json', 'vtt'] as const)('translations, %s: the upstream body and Content-Type', async (format) => {
      const { client, record } = await newKey(gw);
      const res = await client.audio.translations.create({ model: 'whisper-1', file: await toFile(clip, 'clip.wav', { type: 'audio/wav' }), response_format: format }).asResponse();
      const want = await directForm('/v1/audio/translations', { model: 'whisper-1', response_format: format }, clip);
      expect(res.headers.get('content-type')).toBe(want.headers.get('content-type'));
      expect(await res.text()).toBe(await want.text());
      // verbose_json reports the duration; the others leave the header's.
      expect((await ledgerOf(gw, record.id))[0]).toMatchObject({ unit: 'milliseconds', units: 12_500, quota: minuteCredits(12_500) });
    });

    it('translations: the upstream answer, billed by the file header when the upstream reports no duration', async () => {
      const { client, record } = await newKey(gw);
      const res = await client.audio.translations.create({ model: 'whisper-1', file: await toFile(clip, 'clip.wav', { type: 'audio/wav' }) });
      expect(typeof res.text).toBe('string');
      expect((await ledgerOf(gw, record.id))[0]).toMatchObject({ unit: 'milliseconds', units: 12_500, quota: minuteCredits(12_500) });
    });

    it('a file over 25 MB is a 413 the SDK reads, and nothing reaches the upstream', async () => {
      const { client, record } = await newKey(gw);
      const before = sim.requests.length + backup.requests.length;
      const big = Buffer.alloc(25 * 1024 * 1024 + 1, 1);
      const err = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(big, 'big.wav') }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err.status).toBe(413);
      expect(sim.requests.length + backup.requests.length).toBe(before);
      expect(await ledgerOf(gw, record.id)).toHaveLength(0);
      expect(await holdsOf(gw, record.id)).toBe(0);
    });
  });

  describe('rerank', () => {
    const documents = Array.from({ length: 150 }, (_, i) => (i === 42 ? 'the gateway relays rerank calls' : `unrelated document number ${i}`));
    const post = (key: string, path: string, body: Record<string, unknown>) => http(gw.baseUrl, 'POST', path, { auth: `Bearer ${key}`, body });

    it('Cohere shape on a cohere channel: the upstream answer unchanged, billed per search unit', async () => {
      const { key, record } = await newKey(gw);
      const body = { model: 'rerank-v3.5', query: 'gateway rerank', documents, top_n: 3 };
      const res = await post(key, '/v2/rerank', body);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(await (await direct('/v2/rerank', body)).json());
      expect(res.body.results[0].index).toBe(42);
      // 150 documents: 2 search units at 0.002 USD = 2,000 credits.
      expect((await ledgerOf(gw, record.id))[0]).toMatchObject({ unit: 'search_units', units: 2, quota: 2000 });
    });

    it("Jina's shape to a Jina client, Cohere's to a Cohere client, from a jina channel; billed per token", async () => {
      const { key, record } = await newKey(gw);
      const jina = await post(key, '/v1/rerank', { model: 'jina-reranker-v2-base-multilingual', query: 'gateway rerank', documents, top_n: 2, truncation: true });
      expect(jina.status).toBe(200);
      expect(Object.keys(jina.body).sort()).toEqual(['model', 'results', 'usage']);
      const tokens = jina.body.usage.total_tokens;
      const cohere = await post(key, '/rerank', { model: 'jina-reranker-v2-base-multilingual', query: 'gateway rerank', documents, top_n: 2 });
      expect(cohere.body).toMatchObject({ results: [{ index: 42 }, expect.anything()], meta: { billed_units: { search_units: 2 } } });
      expect(cohere.body.results[0].document).toBeUndefined();
      const rows = await ledgerOf(gw, record.id);
      // 0.02 USD per 1M tokens: tokens / 100 credits.
      expect(rows.map((r) => [r.prompt_tokens, r.quota])).toEqual([
        [tokens, Math.ceil(tokens / 100)],
        [tokens, Math.ceil(tokens / 100)],
      ]);
    });

    it('rerank on an openai channel whose server serves /rerank', async () => {
      const { key } = await newKey(gw);
      const res = await post(key, '/v1/rerank', { model: 'bge-reranker-v2-m3', query: 'gateway rerank', documents: documents.slice(40, 45).map((text) => ({ text })), return_documents: true });
      expect(res.status).toBe(200);
      expect(res.body.results[0]).toMatchObject({ index: 2, document: { text: 'the gateway relays rerank calls' } });
    });
  });

  describe('key rules', () => {
    it('the model allowlist and the requests-per-minute limit apply as on every other route', async () => {
      const { key } = await newKey(gw, { models: 'tts-1' });
      const refused = await http(gw.baseUrl, 'POST', '/v1/rerank', { auth: `Bearer ${key}`, body: { model: 'rerank-v3.5', query: 'q', documents: ['d'] } });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBeDefined();
      const acct = (await newKey(gw)).acct;
      const limited = await gw.deps.tokens.create(acct.id, { remain_quota: 10_000_000, rpm_limit: 1 } as never);
      const limitedClient = new OpenAI({ apiKey: `sk-${limited.key}`, baseURL: `${gw.baseUrl}/v1`, maxRetries: 0 });
      await limitedClient.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'one' });
      await expect(limitedClient.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'two' })).rejects.toMatchObject({ status: 429 });
    });
  });

  describe('moderations', () => {
    it('a model without a price is free: 200, a ledger row of 0 credits', async () => {
      const { client, record } = await newKey(gw);
      const res = await client.moderations.create({ model: 'omni-moderation-latest', input: ['I will kill the process', 'hello'] });
      expect(res.results.map((r) => r.flagged)).toEqual([true, false]);
      expect((await ledgerOf(gw, record.id))[0]).toMatchObject({ model: 'omni-moderation-latest', quota: 0 });
      expect((await tokenRow(gw, record.id)).used_quota).toBe(0);
    });

    it('a priced model is billed per input token', async () => {
      const { client, record } = await newKey(gw);
      await client.moderations.create({ model: 'text-moderation-latest', input: 'a long enough text to count some tokens in it' });
      const row = (await ledgerOf(gw, record.id))[0];
      expect(row.prompt_tokens).toBeGreaterThan(0);
      expect(row.quota).toBe(Math.ceil(row.prompt_tokens / 200));
    });
  });
});

describe('moderations an upstream reports usage for', () => {
  let upstream: Server;
  let gw: TestGateway;
  beforeAll(async () => {
    // An OpenAI-compatible upstream whose moderation answers carry `usage`, as some providers' do.
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'modr-1', model: 'text-moderation-latest', results: [{ flagged: false, categories: {}, category_scores: {} }], usage: { prompt_tokens: 4321, total_tokens: 4321 } }));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    const r = validateGatewayConfig(
      {
        channels: [{ name: 'reports-usage', type: 'openai', base_url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`, key: 'k', models: ['text-moderation-latest'] }],
        models: { 'text-moderation-latest': PRICES['text-moderation-latest'] },
      },
      'test',
    );
    if (!r.ok) throw new Error(r.problems.join('\n'));
    gw = await startGateway({ config: ConfigStore.fixed(r.config) });
  });
  afterAll(async () => {
    await gw.close();
    await new Promise((r) => upstream.close(r));
  });

  it('bills the tokens the upstream reports, not a local count', async () => {
    const { client, record } = await newKey(gw);
    await client.moderations.create({ model: 'text-moderation-latest', input: 'short' });
    const row = (await ledgerOf(gw, record.id))[0];
    expect(row.prompt_tokens).toBe(4321);
    expect(row.quota).toBe(Math.ceil(4321 / 200));
  });
});
