import OpenAI, { toFile } from 'openai';
import { startSimulator, type Simulator } from '../../src/simulator';
import { wavHeader } from '../../src/simulator/audio-formats';

const KEY = 'sk-upstream-test';

/** A response's JSON body, loosely typed for assertions. */
async function json(res: Response): Promise<any> {
  return res.json();
}

/** The `data:` payloads of an SSE body, parsed. */
async function sseData(res: Response): Promise<any[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => JSON.parse(block.replace(/^data: /, '')));
}

/** A WAV of `seconds` of silence at `rate` Hz (mono, 16-bit). */
function wav(seconds: number, rate = 24000, fill = 0): Buffer {
  const data = Buffer.alloc(Math.round(seconds * rate) * 2, fill);
  const h = wavHeader(data.length);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  return Buffer.concat([h, data]);
}

describe('upstream simulator: audio, rerank, moderations', () => {
  let sim: Simulator;
  let client: OpenAI;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...headers }, body: JSON.stringify(body) });
  /** POST multipart: text fields (an array repeats the name) and an optional `file`. */
  const upload = (path: string, fields: Record<string, string | string[]>, file?: { data: Buffer; name?: string }) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) form.append(k, x);
    if (file) form.append('file', new Blob([new Uint8Array(file.data)]), file.name ?? 'audio.wav');
    return fetch(`${sim.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: form });
  };
  const speech = (body: Record<string, unknown>, headers?: Record<string, string>) => post('/v1/audio/speech', { model: 'tts-1', voice: 'alloy', ...body }, headers);
  const bytes = async (res: Response) => Buffer.from(await res.arrayBuffer());

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: KEY });
    client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: KEY, maxRetries: 0 });
  });
  afterAll(() => sim.close());
  afterEach(() => {
    sim.clearFaults();
    sim.setOptions({ chunkDelayMs: 0, streamChunks: 5, strictModels: false });
  });

  describe('POST /v1/audio/speech', () => {
    it('answers a chunked WAV whose header gives the duration, the same bytes for the same request', async () => {
      const input = 'Hello from the simulator, this is a test.'; // 41 characters
      const res = await speech({ input, response_format: 'wav' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/wav');
      expect(res.headers.get('transfer-encoding')).toBe('chunked');
      expect(res.headers.get('content-length')).toBeNull();
      const a = await bytes(res);
      expect(a.length).toBe(41 * 200);
      expect(a.toString('latin1', 0, 4)).toBe('RIFF');
      expect(a.readUInt32LE(4)).toBe(a.length - 8);
      expect(a.toString('latin1', 8, 16)).toBe('WAVEfmt ');
      expect(a.readUInt16LE(20)).toBe(1);
      expect(a.readUInt16LE(22)).toBe(1);
      expect(a.readUInt32LE(24)).toBe(24000);
      expect(a.readUInt32LE(28)).toBe(48000);
      expect(a.readUInt16LE(34)).toBe(16);
      expect(a.toString('latin1', 36, 40)).toBe('data');
      expect(a.readUInt32LE(40)).toBe(a.length - 44);
      expect(a.readUInt32LE(40) / a.readUInt32LE(28)).toBeCloseTo((41 * 200 - 44) / 48000, 6);

      expect((await bytes(await speech({ input, response_format: 'wav' }))).equals(a)).toBe(true);
      expect((await bytes(await speech({ input, response_format: 'wav', voice: 'nova' }))).equals(a)).toBe(false);
      // Short inputs still get 1 KiB; the length follows the input.
      expect((await bytes(await speech({ input: 'Hi' }))).length).toBe(1024);
      expect((await bytes(await speech({ input: 'x'.repeat(100) }))).length).toBe(20000);
    });

    it('starts every format with its magic bytes and content type', async () => {
      const cases: Array<[string, string, (b: Buffer) => boolean]> = [
        ['mp3', 'audio/mpeg', (b) => b.toString('latin1', 0, 3) === 'ID3' && b[10] === 0xff && (b[11] & 0xe0) === 0xe0],
        ['opus', 'audio/opus', (b) => b.toString('latin1', 0, 4) === 'OggS' && b.toString('latin1', 28, 36) === 'OpusHead'],
        ['aac', 'audio/aac', (b) => b[0] === 0xff && b[1] === 0xf1 && (((b[3] & 3) << 11) | (b[4] << 3) | (b[5] >> 5)) === 256 && b[256] === 0xff && b[257] === 0xf1],
        ['flac', 'audio/flac', (b) => b.toString('latin1', 0, 4) === 'fLaC'],
        ['wav', 'audio/wav', (b) => b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WAVE'],
        ['pcm', 'audio/pcm', (b) => b.toString('latin1', 0, 4) !== 'RIFF'],
      ];
      for (const [format, type, check] of cases) {
        const res = await speech({ input: 'The quick brown fox.', response_format: format });
        expect([format, res.status, res.headers.get('content-type')]).toEqual([format, 200, type]);
        const b = await bytes(res);
        expect([format, b.length, check(b)]).toEqual([format, 4000, true]);
      }
      // mp3 is the default, and the SDK reads it.
      const viaSdk = Buffer.from(await (await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'The quick brown fox.' })).arrayBuffer());
      expect(viaSdk.toString('latin1', 0, 3)).toBe('ID3');
    });

    it('sends the audio in streamChunks writes paced by chunkDelayMs, the same bytes as unpaced', async () => {
      const unpaced = await bytes(await speech({ input: 'x'.repeat(50), response_format: 'pcm' }));
      sim.setOptions({ chunkDelayMs: 30, streamChunks: 4 });
      const res = await speech({ input: 'x'.repeat(50), response_format: 'pcm' });
      const reader = res.body!.getReader();
      const chunks: Buffer[] = [];
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        chunks.push(Buffer.from(r.value));
      }
      expect(chunks.length).toBeGreaterThanOrEqual(3);
      expect(Buffer.concat(chunks).equals(unpaced)).toBe(true);
      expect(unpaced.length).toBe(10000);
    });

    it("'reset-mid-stream' sends the first audio chunks, then drops the connection", async () => {
      const res = await speech({ input: 'x'.repeat(50), response_format: 'wav' }, { 'x-sim-fault': 'reset-mid-stream' });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      let got = 0;
      await expect(
        (async () => {
          for (;;) {
            const r = await reader.read();
            if (r.done) return;
            got += r.value.length;
          }
        })(),
      ).rejects.toThrow();
      expect(got).toBe(4000); // 2 of 5 chunks
    });

    it("streams speech.audio.delta events and a done event with usage for gpt-4o models (stream_format 'sse')", async () => {
      sim.setOptions({ streamChunks: 3 });
      const input = 'Streaming speech, in pieces.'; // 28 characters
      const plain = await bytes(await speech({ model: 'gpt-4o-mini-tts', input, response_format: 'wav' }));
      const res = await speech({ model: 'gpt-4o-mini-tts', input, response_format: 'wav', stream_format: 'sse' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = await sseData(res);
      expect(events).toHaveLength(4);
      for (const e of events.slice(0, 3)) expect(e).toEqual({ type: 'speech.audio.delta', audio: expect.any(String) });
      expect(Buffer.concat(events.slice(0, 3).map((e) => Buffer.from(e.audio, 'base64'))).equals(plain)).toBe(true);
      expect(events[3]).toEqual({ type: 'speech.audio.done', usage: { input_tokens: 7, output_tokens: 112, total_tokens: 119 } });

      const bad = await speech({ model: 'tts-1', input, stream_format: 'sse' });
      expect(bad.status).toBe(400);
      expect((await json(bad)).error).toMatchObject({ message: 'stream_format sse is not supported for this model', param: 'stream_format', type: 'invalid_request_error' });
    });

    it('rejects bad requests with the offending param', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ input: undefined }, 'input'],
        [{ input: '' }, 'input'],
        [{ input: 'x'.repeat(4097) }, 'input'],
        [{ input: 'hi', voice: undefined }, 'voice'],
        [{ input: 'hi', voice: { name: 'x' } }, 'voice'],
        [{ input: 'hi', response_format: 'ogg' }, 'response_format'],
        [{ input: 'hi', speed: 5 }, 'speed'],
        [{ input: 'hi', stream_format: 'chunks' }, 'stream_format'],
        [{ input: 'hi', model: 'gpt-4o' }, 'model'],
      ];
      for (const [body, param] of cases) {
        const res = await speech(body);
        expect([param, res.status]).toEqual([param, 400]);
        expect((await json(res)).error).toMatchObject({ param, type: 'invalid_request_error' });
      }
      const custom = await speech({ input: 'hi', voice: { id: 'voice_123' }, speed: 0.25, instructions: 'Calm.' });
      expect(custom.status).toBe(200);
      expect(await speech({ input: 'hi' }, { authorization: 'Bearer wrong' }).then((r) => r.status)).toBe(401);
    });

    it('honours faults and records the request', async () => {
      sim.addFault({ kind: 'status', status: 503, count: 1, path: '/audio/speech' });
      const res = await speech({ input: 'hi' });
      expect(res.status).toBe(503);
      expect((await json(res)).error.type).toBe('server_error');
      await expect(speech({ input: 'hi' }, { 'x-sim-fault': 'reset' })).rejects.toThrow();
      sim.resetRecords();
      await speech({ input: 'recorded' }).then(bytes);
      expect(sim.requests.at(-1)).toMatchObject({ method: 'POST', path: '/v1/audio/speech', body: { model: 'tts-1', voice: 'alloy', input: 'recorded' } });
    });
  });

  describe('POST /v1/audio/transcriptions and /translations', () => {
    const tenSeconds = wav(10, 16000);

    it('whisper-1: json with duration usage, the WAV duration from its header, and the same text for the same file', async () => {
      const res = await upload('/v1/audio/transcriptions', { model: 'whisper-1' }, { data: tenSeconds });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json');
      const body = await json(res);
      expect(body).toEqual({ text: expect.any(String), usage: { type: 'duration', seconds: 10 } });
      expect(body.text.split(' ')).toHaveLength(25);
      expect(body.text).toMatch(/^[A-Z][a-z ,.A-Z]+\.$/);
      const again = await json(await upload('/v1/audio/transcriptions', { model: 'whisper-1' }, { data: tenSeconds }));
      expect(again.text).toBe(body.text);
      const other = await json(await upload('/v1/audio/transcriptions', { model: 'whisper-1' }, { data: wav(10, 16000, 1) }));
      expect(other.text).not.toBe(body.text);

      // Not a WAV: 16000 bytes per second.
      const mp3ish = await json(await upload('/v1/audio/transcriptions', { model: 'whisper-1' }, { data: Buffer.alloc(48000, 7), name: 'a.mp3' }));
      expect(mp3ish.usage).toEqual({ type: 'duration', seconds: 3 });
      expect(mp3ish.text.split(' ').length).toBeGreaterThanOrEqual(7);
      // A tiny file still gets 3 words.
      const tiny = await json(await upload('/v1/audio/transcriptions', { model: 'whisper-1' }, { data: Buffer.from('abc') }));
      expect(tiny.text.split(' ')).toHaveLength(3);
      expect(tiny.usage.seconds).toBe(1);

      const viaSdk = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(tenSeconds, 'a.wav', { type: 'audio/wav' }) });
      expect(viaSdk.text).toBe(body.text);
    });

    it('whisper-1: text, srt, vtt and verbose_json (with words when asked)', async () => {
      const text = await upload('/v1/audio/transcriptions', { model: 'whisper-1', response_format: 'text' }, { data: tenSeconds });
      expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      const t = await text.text();
      expect(t.endsWith('.\n')).toBe(true);

      const srt = await upload('/v1/audio/transcriptions', { model: 'whisper-1', response_format: 'srt' }, { data: tenSeconds });
      expect(srt.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      const s = await srt.text();
      expect(s).toMatch(/^1\n00:00:00,000 --> 00:00:0\d,\d{3}\n\S.*\n\n2\n00:00:0\d,\d{3} --> 00:00:10,000\n\S.*\n\n$/);

      const vtt = await upload('/v1/audio/transcriptions', { model: 'whisper-1', response_format: 'vtt' }, { data: tenSeconds });
      expect(vtt.headers.get('content-type')).toBe('text/vtt; charset=utf-8');
      expect(await vtt.text()).toMatch(/^WEBVTT\n\n00:00:00\.000 --> 00:00:0\d\.\d{3}\n\S.*\n\n00:00:0\d\.\d{3} --> 00:00:10\.000\n/);

      const v = await json(await upload('/v1/audio/transcriptions', { model: 'whisper-1', response_format: 'verbose_json', 'timestamp_granularities[]': ['segment', 'word'] }, { data: tenSeconds }));
      expect(v).toMatchObject({ task: 'transcribe', language: 'english', duration: 10, text: t.slice(0, -1), usage: { type: 'duration', seconds: 10 } });
      expect(v.segments).toHaveLength(2);
      expect(v.segments[0]).toEqual({ id: 0, seek: 0, start: 0, end: expect.any(Number), text: expect.any(String), tokens: [], temperature: 0, avg_logprob: -0.2, compression_ratio: 1.2, no_speech_prob: 0.01 });
      expect(v.segments.map((x: { text: string }) => x.text).join(' ')).toBe(v.text);
      expect(v.words).toHaveLength(25);
      expect(v.words[24]).toEqual({ word: expect.stringMatching(/^[a-z]+$/), start: 9.6, end: 10 });
      const noWords = await json(await upload('/v1/audio/transcriptions', { model: 'whisper-1', response_format: 'verbose_json' }, { data: tenSeconds }));
      expect(noWords.words).toBeUndefined();

      // whisper-1 ignores stream=true.
      const streamed = await upload('/v1/audio/transcriptions', { model: 'whisper-1', stream: 'true' }, { data: tenSeconds });
      expect(streamed.headers.get('content-type')).toBe('application/json');
    });

    it('gpt-4o transcribe models: token usage, json/text only, and SSE with stream=true', async () => {
      const res = await upload('/v1/audio/transcriptions', { model: 'gpt-4o-transcribe', prompt: 'Names: Ada, Bob.' }, { data: tenSeconds });
      const body = await json(res);
      expect(body.usage).toEqual({ type: 'tokens', input_tokens: 104, input_token_details: { audio_tokens: 100, text_tokens: 4 }, output_tokens: 33, total_tokens: 137 });
      const text = await upload('/v1/audio/transcriptions', { model: 'gpt-4o-mini-transcribe', response_format: 'text' }, { data: tenSeconds });
      expect(await text.text()).toBe(`${body.text}\n`);

      const srt = await upload('/v1/audio/transcriptions', { model: 'gpt-4o-transcribe', response_format: 'srt' }, { data: tenSeconds });
      expect(srt.status).toBe(400);
      expect((await json(srt)).error).toMatchObject({ param: 'response_format' });

      sim.setOptions({ streamChunks: 4 });
      const sse = await upload('/v1/audio/transcriptions', { model: 'gpt-4o-mini-transcribe', stream: 'true' }, { data: tenSeconds });
      expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = await sseData(sse);
      const deltas = events.slice(0, -1);
      expect(deltas.length).toBe(4);
      for (const d of deltas) expect(d).toEqual({ type: 'transcript.text.delta', delta: expect.any(String) });
      expect(deltas.map((d) => d.delta).join('')).toBe(body.text);
      expect(events.at(-1)).toEqual({ type: 'transcript.text.done', text: body.text, usage: { type: 'tokens', input_tokens: 100, input_token_details: { audio_tokens: 100, text_tokens: 0 }, output_tokens: 33, total_tokens: 133 } });
    });

    it('translations: whisper-1 only, json without usage, task translate', async () => {
      const j = await json(await upload('/v1/audio/translations', { model: 'whisper-1' }, { data: tenSeconds }));
      expect(j).toEqual({ text: expect.any(String) });
      const v = await json(await upload('/v1/audio/translations', { model: 'whisper-1', response_format: 'verbose_json' }, { data: tenSeconds }));
      expect(v).toMatchObject({ task: 'translate', duration: 10, text: j.text });
      const vtt = await upload('/v1/audio/translations', { model: 'whisper-1', response_format: 'vtt' }, { data: tenSeconds });
      expect((await vtt.text()).startsWith('WEBVTT\n\n')).toBe(true);
      const sdk = await client.audio.translations.create({ model: 'whisper-1', file: await toFile(tenSeconds, 'a.wav') });
      expect(sdk.text).toBe(j.text);
      const bad = await upload('/v1/audio/translations', { model: 'gpt-4o-transcribe' }, { data: tenSeconds });
      expect(bad.status).toBe(400);
      expect((await json(bad)).error).toMatchObject({ param: 'model' });
    });

    it('400 without file or model or with a bad format, 413 over 25 MB; records fields and files', async () => {
      const noFile = await upload('/v1/audio/transcriptions', { model: 'whisper-1' });
      expect(noFile.status).toBe(400);
      expect((await json(noFile)).error).toMatchObject({ param: 'file', code: 'missing_required_parameter', type: 'invalid_request_error' });
      const noModel = await upload('/v1/audio/transcriptions', {}, { data: tenSeconds });
      expect((await json(noModel)).error).toMatchObject({ param: 'model' });
      const badFormat = await upload('/v1/audio/transcriptions', { model: 'whisper-1', response_format: 'xml' }, { data: tenSeconds });
      expect((await json(badFormat)).error).toMatchObject({ param: 'response_format' });
      const json400 = await post('/v1/audio/transcriptions', { model: 'whisper-1' });
      expect(json400.status).toBe(400);

      const big = await upload('/v1/audio/transcriptions', { model: 'whisper-1' }, { data: Buffer.alloc(25 * 1024 * 1024 + 1) });
      expect(big.status).toBe(413);
      expect((await json(big)).error).toMatchObject({ param: 'file', type: 'invalid_request_error', message: expect.stringContaining('26214400') });

      sim.resetRecords();
      await upload('/v1/audio/transcriptions', { model: 'whisper-1', language: 'en' }, { data: tenSeconds, name: 'ten.wav' }).then(json);
      expect(sim.requests.at(-1)).toMatchObject({
        path: '/v1/audio/transcriptions',
        body: { fields: { model: 'whisper-1', language: 'en' }, files: [{ name: 'file', filename: 'ten.wav', size: tenSeconds.length }] },
      });
    });
  });

  describe('rerank', () => {
    const documents = ['Paris is the capital of France.', 'The weather is nice today.', 'France has many cities; its capital is Paris.', 'Bananas are yellow.'];
    const query = 'What is the capital of France?';

    it('POST /v2/rerank: Cohere shape, ordered by shared words, top_n, documents only when asked', async () => {
      const res = await post('/v2/rerank', { model: 'rerank-v3.5', query, documents, top_n: 3 });
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(body.meta).toEqual({ api_version: { version: '2' }, billed_units: { search_units: 1 } });
      expect(body.results.map((r: { index: number }) => r.index)).toEqual([0, 2, 1]);
      for (const r of body.results) {
        expect(Object.keys(r).sort()).toEqual(['index', 'relevance_score']);
        expect(r.relevance_score).toBeGreaterThan(0);
        expect(r.relevance_score).toBeLessThan(1);
      }
      expect(body.results[0].relevance_score).toBeGreaterThan(body.results[1].relevance_score);
      const again = await json(await post('/v2/rerank', { model: 'rerank-v3.5', query, documents, top_n: 3 }));
      expect(again).toEqual(body);

      const withDocs = await json(await post('/v2/rerank', { model: 'rerank-v3.5', query, documents: documents.map((text) => ({ text })), return_documents: true }));
      expect(withDocs.results).toHaveLength(4);
      expect(withDocs.results[0]).toEqual({ index: 0, relevance_score: body.results[0].relevance_score, document: { text: documents[0] } });
      // Ties keep index order.
      const ties = await json(await post('/v2/rerank', { model: 'rerank-v3.5', query: 'zebra', documents: ['a b', 'c d', 'e f'] }));
      expect(ties.results.map((r: { index: number }) => r.index)).toEqual([0, 1, 2]);
      const many = await json(await post('/v2/rerank', { model: 'rerank-v3.5', query, documents: Array.from({ length: 101 }, (_, i) => `doc ${i}`) }));
      expect(many.meta.billed_units.search_units).toBe(2);
    });

    it('POST /v2/rerank: 400 {message} without query or documents, and on faults', async () => {
      for (const body of [{ model: 'rerank-v3.5', documents }, { model: 'rerank-v3.5', query: '', documents }, { model: 'rerank-v3.5', query, documents: [] }, { model: 'rerank-v3.5', query }]) {
        const res = await post('/v2/rerank', body);
        expect(res.status).toBe(400);
        expect(await json(res)).toEqual({ message: expect.any(String) });
      }
      const fault = await post('/v2/rerank', { model: 'rerank-v3.5', query, documents }, { 'x-sim-fault': 'status=429' });
      expect(fault.status).toBe(429);
      expect(await json(fault)).toEqual({ message: 'Simulated upstream error 429.' });
      const unauth = await post('/v2/rerank', { model: 'rerank-v3.5', query, documents }, { authorization: 'Bearer nope' });
      expect(unauth.status).toBe(401);
      expect(await json(unauth)).toEqual({ message: expect.any(String) });
    });

    it('POST /v1/rerank: Jina / vLLM shape with documents by default and counted tokens', async () => {
      const res = await post('/v1/rerank', { model: 'jina-reranker-v2-base-multilingual', query, documents, top_n: 2 });
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(Object.keys(body).sort()).toEqual(['model', 'results', 'usage']);
      expect(body.model).toBe('jina-reranker-v2-base-multilingual');
      // ceil(30/4)=8 per document, plus ceil(31/4)=8, ceil(26/4)=7, ceil(45/4)=12, ceil(19/4)=5.
      expect(body.usage).toEqual({ total_tokens: 4 * 8 + 8 + 7 + 12 + 5 });
      expect(body.results).toEqual([
        { index: 0, relevance_score: expect.any(Number), document: { text: documents[0] } },
        { index: 2, relevance_score: expect.any(Number), document: { text: documents[2] } },
      ]);
      const bare = await json(await post('/v1/rerank', { model: 'bge-reranker-v2-m3', query, documents, return_documents: false }));
      expect(bare.results[0]).toEqual({ index: 0, relevance_score: body.results[0].relevance_score });
      const capped = await json(await post('/v1/rerank', { model: 'bge-reranker-v2-m3', query, documents, max_tokens_per_doc: 2 }));
      expect(capped.usage.total_tokens).toBe(4 * 8 + 4 * 2);

      const bad = await post('/v1/rerank', { model: 'bge-reranker-v2-m3', query });
      expect(bad.status).toBe(400);
      expect((await json(bad)).error).toMatchObject({ param: 'documents', type: 'invalid_request_error' });
      const noQuery = await post('/v1/rerank', { model: 'bge-reranker-v2-m3', documents });
      expect((await json(noQuery)).error).toMatchObject({ param: 'query' });
    });

    it('checks model kinds and, with strictModels, unknown ids', async () => {
      sim.setOptions({ strictModels: true });
      const chat = await post('/v1/rerank', { model: 'gpt-4o', query, documents });
      expect(chat.status).toBe(400);
      expect((await json(chat)).error).toMatchObject({ code: 'model_not_supported' });
      expect((await post('/v2/rerank', { model: 'nope', query, documents })).status).toBe(404);
      expect((await post('/v1/moderations', { model: 'whisper-1', input: 'x' })).status).toBe(400);
      expect((await upload('/v1/audio/transcriptions', { model: 'tts-1' }, { data: Buffer.from('abc') })).status).toBe(400);
      const list = [];
      for await (const m of client.models.list()) list.push(m.id);
      expect(list).toEqual(expect.arrayContaining(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts', 'whisper-1', 'gpt-4o-transcribe', 'gpt-4o-mini-transcribe', 'rerank-v3.5', 'jina-reranker-v2-base-multilingual', 'bge-reranker-v2-m3', 'omni-moderation-latest', 'text-moderation-latest']));
    });
  });

  describe('POST /v1/moderations', () => {
    it('flags the word kill, one result per input, deterministic scores and id', async () => {
      const res = await post('/v1/moderations', { input: ['I will kill the process', 'Have a nice day'] });
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(body.id).toMatch(/^modr-[0-9a-f]+$/);
      expect(body.model).toBe('omni-moderation-latest');
      expect(body.results).toHaveLength(2);
      const [bad, good] = body.results;
      expect(Object.keys(bad.categories)).toHaveLength(13);
      expect(Object.keys(bad.category_scores)).toEqual(Object.keys(bad.categories));
      expect(bad.flagged).toBe(true);
      expect(bad.categories.violence).toBe(true);
      expect(bad.category_scores.violence).toBeGreaterThan(0.9);
      expect(bad.category_applied_input_types.violence).toEqual(['text']);
      expect(good.flagged).toBe(false);
      expect(Object.values(good.categories).every((v) => v === false)).toBe(true);
      for (const s of Object.values(good.category_scores) as number[]) {
        expect(s).toBeGreaterThan(0);
        expect(s).toBeLessThan(0.02);
      }
      expect(await json(await post('/v1/moderations', { input: ['I will kill the process', 'Have a nice day'] }))).toEqual(body);

      const sdk = await client.moderations.create({ model: 'text-moderation-latest', input: 'Kill it' });
      expect(sdk.model).toBe('text-moderation-latest');
      expect(sdk.results[0].flagged).toBe(true);
      expect((await client.moderations.create({ input: 'skills and killer apps' })).results[0].flagged).toBe(false);
    });

    it('answers one result for multimodal parts, and 400 without input', async () => {
      const input = [{ type: 'text', text: 'A picture' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }];
      const body = await json(await post('/v1/moderations', { model: 'omni-moderation-latest', input }));
      expect(body.results).toHaveLength(1);
      expect(body.results[0].flagged).toBe(false);
      expect(body.results[0].category_applied_input_types.violence).toEqual(['text', 'image']);
      expect(body.results[0].category_applied_input_types.hate).toEqual(['text']);
      const legacy = await post('/v1/moderations', { model: 'text-moderation-latest', input });
      expect(legacy.status).toBe(400);
      for (const b of [{}, { input: [] }, { input: [{ type: 'audio' }] }]) {
        const res = await post('/v1/moderations', b);
        expect(res.status).toBe(400);
        expect((await json(res)).error).toMatchObject({ param: 'input' });
      }
    });
  });
});
