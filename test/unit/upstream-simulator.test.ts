import OpenAI, { toFile } from 'openai';
import { countTokens, startSimulator, TINY_PNG, type Simulator } from '../../src/simulator';
import { splitTokens, truncateTokens } from '../../src/simulator/tokens';
import { waitFor } from '../helpers/wait';

const KEY = 'sk-upstream-test';

/** A response's JSON body, loosely typed for assertions. */
async function json(res: Response): Promise<any> {
  return res.json();
}

/** Parsed SSE events of a response: `{event?, data}` in order. */
async function sseEvents(res: Response): Promise<Array<{ event?: string; data: string }>> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const out: { event?: string; data: string } = { data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) out.event = line.slice(7);
        else if (line.startsWith('data: ')) out.data += line.slice(6);
      }
      return out;
    });
}

/** Reads a streamed body until it fails or ends; what arrived and how it ended. */
async function drain(res: Response, stopAfterMs?: number): Promise<{ text: string; ended: 'done' | 'error' | 'timeout' }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const next = reader.read();
    const timed = stopAfterMs === undefined ? next : Promise.race([next, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), stopAfterMs))]);
    try {
      const r = await timed;
      if (r === 'timeout') {
        void reader.cancel().catch(() => {});
        return { text, ended: 'timeout' };
      }
      if (r.done) return { text, ended: 'done' };
      text += decoder.decode(r.value, { stream: true });
    } catch {
      return { text, ended: 'error' };
    }
  }
}

describe('upstream simulator', () => {
  let sim: Simulator;
  let client: OpenAI;
  /** POST JSON with the bearer key; a header given as '' is left out. */
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const all: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...headers };
    for (const k of Object.keys(all)) if (all[k] === '') delete all[k];
    return fetch(`${sim.url}${path}`, { method: 'POST', headers: all, body: JSON.stringify(body) });
  };
  const anthropic = (body: unknown, headers: Record<string, string> = {}) =>
    post('/v1/messages', body, { authorization: '', 'x-api-key': KEY, 'anthropic-version': '2023-06-01', ...headers });
  const chat = { model: 'gpt-4o', messages: [{ role: 'user' as const, content: 'Hello there, how are you?' }] };

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: KEY });
    client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: KEY, maxRetries: 0 });
  });
  afterAll(() => sim.close());
  afterEach(() => {
    sim.clearFaults();
    sim.setOptions({ latencyMs: 0, chunkDelayMs: 0, streamChunks: 5 });
  });

  describe('tokenizer', () => {
    it('counts up to 4 word characters or one symbol per token, and splits/truncates losslessly', () => {
      expect(countTokens('hello, world')).toBe(5);
      expect(countTokens('')).toBe(0);
      expect(countTokens('  a  b ')).toBe(2);
      expect(countTokens('你好!')).toBe(3);
      const text = 'The quick brown fox jumps over the lazy dog.';
      expect(splitTokens(text, 4).join('')).toBe(text);
      expect(splitTokens(text, 4)).toHaveLength(4);
      expect(splitTokens('hi', 5)).toEqual(['hi']);
      expect(truncateTokens(text, 3)).toEqual({ text: 'The quick', cut: true });
    });
  });

  describe('OpenAI chat', () => {
    it('answers deterministically with counted usage, n choices, and records the request with its key', async () => {
      sim.resetRecords();
      const r = await client.chat.completions.create({ ...chat, n: 2 });
      const text = 'This is a simulated answer to: Hello there, how are you?';
      expect(r.object).toBe('chat.completion');
      expect(r.id).toMatch(/^chatcmpl-/);
      expect(r.model).toBe('gpt-4o');
      expect(r.choices.map((c) => [c.index, c.message.role, c.message.content, c.finish_reason])).toEqual([
        [0, 'assistant', text, 'stop'],
        [1, 'assistant', text, 'stop'],
      ]);
      const prompt = 3 + 3 + countTokens(chat.messages[0].content);
      expect(r.usage).toEqual({ prompt_tokens: prompt, completion_tokens: 2 * countTokens(text), total_tokens: prompt + 2 * countTokens(text) });
      const again = await client.chat.completions.create(chat);
      expect(again.choices[0].message.content).toBe(text);
      expect(again.id).not.toBe(r.id);

      expect(sim.requests).toHaveLength(2);
      const rec = sim.requests[0];
      expect(rec).toMatchObject({ method: 'POST', path: '/v1/chat/completions', body: { ...chat, n: 2 } });
      expect(rec.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(typeof rec.at).toBe('number');
      sim.resetRecords();
      expect(sim.requests).toHaveLength(0);
    });

    it('cuts at max_tokens with finish_reason length, at stop sequences with stop, and counts image parts', async () => {
      const r = await client.chat.completions.create({ ...chat, max_tokens: 3 });
      expect(r.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'This is a' } });
      expect(r.usage?.completion_tokens).toBe(3);
      const s = await client.chat.completions.create({ ...chat, stop: ['answer'] });
      expect(s.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'This is a simulated ' } });
      const img = await client.chat.completions.create({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }],
      });
      expect(img.choices[0].message.content).toBe('This is a simulated answer to: What is this? I see 1 image.');
      expect(img.usage?.prompt_tokens).toBe(3 + 3 + countTokens('What is this?') + 85);
    });

    it('rejects a request without model or messages with an OpenAI error', async () => {
      const res = await post('/v1/chat/completions', { model: 'gpt-4o' });
      expect(res.status).toBe(400);
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
      expect(await json(res)).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: 'messages', code: 'missing_required_parameter' } });
      const noModel = await post('/v1/chat/completions', { messages: chat.messages });
      expect((await json(noModel)).error.param).toBe('model');
      const wrongKind = await post('/v1/chat/completions', { ...chat, model: 'text-embedding-3-small' });
      expect(wrongKind.status).toBe(400);
      const badJson = await fetch(`${sim.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: '{nope' });
      expect(badJson.status).toBe(400);
      await expect(client.chat.completions.create({ ...chat, model: 'no-such-model' })).resolves.toBeDefined();
      sim.setOptions({ strictModels: true });
      try {
        await expect(client.chat.completions.create({ ...chat, model: 'no-such-model' })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
      } finally {
        sim.setOptions({ strictModels: false });
      }
    });

    it('streams role chunk, streamChunks content chunks, finish, and the usage chunk only with include_usage', async () => {
      const stream = await client.chat.completions.create({ ...chat, stream: true, stream_options: { include_usage: true } });
      const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
      for await (const c of stream) chunks.push(c);
      expect(chunks[0].choices[0].delta).toMatchObject({ role: 'assistant', content: '' });
      const content = chunks.slice(1, -2);
      expect(content).toHaveLength(5);
      const text = content.map((c) => c.choices[0].delta.content).join('');
      expect(text).toBe('This is a simulated answer to: Hello there, how are you?');
      expect(chunks.slice(0, -1).every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id)).toBe(true);
      expect(chunks.at(-2)!.choices[0].finish_reason).toBe('stop');
      expect(chunks.at(-1)!.choices).toEqual([]);
      expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 3 + 3 + countTokens(chat.messages[0].content), completion_tokens: countTokens(text), total_tokens: 6 + countTokens(chat.messages[0].content) + countTokens(text) });

      sim.setOptions({ streamChunks: 2 });
      const res = await post('/v1/chat/completions', { ...chat, stream: true });
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = await sseEvents(res);
      expect(events.at(-1)!.data).toBe('[DONE]');
      const parsed = events.slice(0, -1).map((e) => JSON.parse(e.data));
      expect(parsed).toHaveLength(1 + 2 + 1);
      expect(parsed.every((c) => c.choices.length === 1 && !('usage' in c))).toBe(true);
    });

    it('answers with tool_calls when a tool is asked for or forced, streamed too, and with text after the tool result', async () => {
      const tools: OpenAI.Chat.ChatCompletionTool[] = [
        { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } },
        { type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { location: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['location', 'unit'] } } },
      ];
      const ask = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];
      const r = await client.chat.completions.create({ model: 'gpt-4o', messages: ask, tools });
      expect(r.choices[0].finish_reason).toBe('tool_calls');
      expect(r.choices[0].message.content).toBeNull();
      const call = r.choices[0].message.tool_calls![0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
      expect(call).toMatchObject({ id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_weather' } });
      expect(JSON.parse(call.function.arguments)).toEqual({ location: 'Paris', unit: 'c' });

      const forced = await client.chat.completions.create({ ...chat, tools, tool_choice: { type: 'function', function: { name: 'lookup' } } });
      expect(forced.choices[0].message.tool_calls![0]).toMatchObject({ function: { name: 'lookup', arguments: '{"q":"example"}' } });
      const none = await client.chat.completions.create({ model: 'gpt-4o', messages: ask, tools, tool_choice: 'none' });
      expect(none.choices[0].finish_reason).toBe('stop');

      const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: ask, tools, stream: true });
      let args = '';
      let name = '';
      let id = '';
      let finish: string | null = null;
      for await (const c of stream) {
        const tc = c.choices[0]?.delta.tool_calls?.[0];
        if (tc?.id) id = tc.id;
        if (tc?.function?.name) name = tc.function.name;
        args += tc?.function?.arguments ?? '';
        finish = c.choices[0]?.finish_reason ?? finish;
      }
      expect({ name, finish, args: JSON.parse(args) }).toEqual({ name: 'get_weather', finish: 'tool_calls', args: { location: 'Paris', unit: 'c' } });
      expect(id).toMatch(/^call_/);

      const after = await client.chat.completions.create({
        model: 'gpt-4o',
        tools,
        messages: [...ask, r.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '18 degrees' }],
      });
      expect(after.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'The tool returned: 18 degrees' } });
    });
  });

  describe('OpenAI embeddings, images, models', () => {
    it('returns deterministic unit vectors as float and as little-endian float32 base64', async () => {
      const f = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['hello', 'world'], encoding_format: 'float' });
      expect(f.object).toBe('list');
      expect(f.data.map((d) => [d.object, d.index, d.embedding.length])).toEqual([['embedding', 0, 16], ['embedding', 1, 16]]);
      expect(Math.hypot(...f.data[0].embedding)).toBeCloseTo(1, 5);
      expect(f.usage).toEqual({ prompt_tokens: 4, total_tokens: 4 });
      // The SDK asks for base64 when no format is given and decodes it: the same numbers.
      const b = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['hello', 'world'] });
      expect(b.data.map((d) => d.embedding)).toEqual(f.data.map((d) => d.embedding));
      const raw = await json(await post('/v1/embeddings', { model: 'text-embedding-3-small', input: 'hello', encoding_format: 'base64' }));
      const buf = Buffer.from(raw.data[0].embedding, 'base64');
      expect(Array.from({ length: 16 }, (_, i) => buf.readFloatLE(i * 4))).toEqual(f.data[0].embedding);

      const dims = await client.embeddings.create({ model: 'text-embedding-3-large', input: [[1, 2, 3], [4]], dimensions: 256, encoding_format: 'float' });
      expect(dims.data.map((d) => d.embedding.length)).toEqual([256, 256]);
      expect(dims.usage.prompt_tokens).toBe(4);
      const bad = await post('/v1/embeddings', { model: 'text-embedding-3-small', input: [] });
      expect(bad.status).toBe(400);
      expect((await json(bad)).error.param).toBe('input');
    });

    it('generates images as downloadable urls or b64_json PNGs', async () => {
      const u = await client.images.generate({ model: 'dall-e-3', prompt: 'a red fox', n: 2, size: '1024x1792' });
      expect(u.created).toEqual(expect.any(Number));
      expect(u.data).toHaveLength(2);
      expect(u.data![0]).toMatchObject({ url: expect.stringMatching(new RegExp(`^${sim.url}/files/.+\\.png$`)), revised_prompt: 'a red fox' });
      const png = await fetch(u.data![0].url!);
      expect(png.headers.get('content-type')).toBe('image/png');
      expect(Buffer.from(await png.arrayBuffer())).toEqual(TINY_PNG);
      const b = await client.images.generate({ model: 'dall-e-3', prompt: 'x', response_format: 'b64_json' });
      expect(Buffer.from(b.data![0].b64_json!, 'base64').subarray(0, 4).toString('latin1')).toBe('\x89PNG');
      const bad = await post('/v1/images/generations', { model: 'dall-e-3', prompt: 'x', size: 'big' });
      expect(bad.status).toBe(400);
    });

    it('edits images from multipart uploads and rejects a file that is not an image', async () => {
      sim.resetRecords();
      const r = await client.images.edit({
        model: 'gpt-image-1',
        image: await toFile(TINY_PNG, 'in.png', { type: 'image/png' }),
        mask: await toFile(TINY_PNG, 'mask.png', { type: 'image/png' }),
        prompt: 'make it blue',
        n: 1,
        size: '1024x1024',
      });
      expect(r.data![0].b64_json).toEqual(expect.any(String));
      expect(sim.requests[0].body).toEqual({
        fields: expect.objectContaining({ model: 'gpt-image-1', prompt: 'make it blue', n: '1', size: '1024x1024' }),
        files: [
          { name: 'image', filename: 'in.png', contentType: 'image/png', size: TINY_PNG.length },
          { name: 'mask', filename: 'mask.png', contentType: 'image/png', size: TINY_PNG.length },
        ],
      });
      await expect(
        client.images.edit({ model: 'dall-e-2', image: await toFile(Buffer.from('not an image'), 'notes.txt', { type: 'text/plain' }), prompt: 'x' }),
      ).rejects.toMatchObject({ status: 400, code: 'invalid_image_file', param: 'image' });
      await expect(client.images.edit({ image: await toFile(TINY_PNG, 'in.png', { type: 'image/png' }), prompt: '' })).rejects.toMatchObject({ status: 400, param: 'prompt' });
    });

    it('lists the simulator models in OpenAI format, and the Anthropic ones with anthropic-version', async () => {
      const list = [];
      for await (const m of client.models.list()) list.push(m);
      expect(list.find((m) => m.id === 'gpt-4o')).toEqual({ id: 'gpt-4o', object: 'model', created: expect.any(Number), owned_by: 'openai' });
      expect(list.length).toBeGreaterThan(20);
      expect((await client.models.retrieve('claude-opus-4')).owned_by).toBe('anthropic');
      const a = await fetch(`${sim.url}/v1/models`, { headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' } });
      const body = await json(a);
      expect(body.data[0]).toEqual({ type: 'model', id: expect.stringMatching(/^claude/), display_name: expect.any(String), created_at: expect.any(String) });
      expect(body.has_more).toBe(false);
    });
  });

  describe('Anthropic messages', () => {
    const msg = { model: 'claude-sonnet-4', max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello there' }] };

    it('answers in the Messages format with usage', async () => {
      const res = await anthropic(msg);
      expect(res.status).toBe(200);
      expect(res.headers.get('request-id')).toMatch(/^req_/);
      const text = 'This is a simulated answer to: Hello there';
      expect(await json(res)).toEqual({
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4',
        content: [{ type: 'text', text }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 3 + countTokens('Be brief.') + 3 + countTokens('Hello there'), output_tokens: countTokens(text), cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      });
      const short = await json(await anthropic({ ...msg, max_tokens: 2 }));
      expect(short).toMatchObject({ stop_reason: 'max_tokens', content: [{ text: 'This is' }], usage: { output_tokens: 2 } });
      const stopped = await json(await anthropic({ ...msg, stop_sequences: ['simulated'] }));
      expect(stopped).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'simulated', content: [{ text: 'This is a ' }] });
    });

    it('requires anthropic-version, max_tokens and messages, with Anthropic error bodies', async () => {
      const res = await anthropic(msg, { 'anthropic-version': '' });
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' } });
      const noMax = await anthropic({ ...msg, max_tokens: undefined });
      expect(noMax.status).toBe(400);
      expect((await json(noMax)).error).toEqual({ type: 'invalid_request_error', message: 'max_tokens: Field required' });
      const noMessages = await anthropic({ model: 'claude-sonnet-4', max_tokens: 5 });
      expect(noMessages.status).toBe(400);
      const count = await json(await post('/v1/messages/count_tokens', { model: 'claude-sonnet-4', messages: msg.messages }, { authorization: '', 'x-api-key': KEY, 'anthropic-version': '2023-06-01' }));
      expect(count).toEqual({ input_tokens: 3 + 3 + countTokens('Hello there') });
    });

    it('streams the real SSE event sequence', async () => {
      sim.setOptions({ streamChunks: 3 });
      const res = await anthropic({ ...msg, stream: true });
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = await sseEvents(res);
      expect(events.map((e) => e.event)).toEqual([
        'message_start', 'content_block_start', 'ping',
        'content_block_delta', 'content_block_delta', 'content_block_delta',
        'content_block_stop', 'message_delta', 'message_stop',
      ]);
      const data = events.map((e) => JSON.parse(e.data));
      expect(data.every((d, i) => d.type === events[i].event)).toBe(true);
      expect(data[0].message).toMatchObject({ id: expect.stringMatching(/^msg_/), type: 'message', role: 'assistant', content: [], stop_reason: null, usage: { input_tokens: expect.any(Number) } });
      expect(data[1]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
      const text = data.slice(3, 6).map((d) => { expect(d.delta.type).toBe('text_delta'); return d.delta.text; }).join('');
      expect(text).toBe('This is a simulated answer to: Hello there');
      expect(data[7]).toEqual({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: countTokens(text) } });
    });

    it('uses tools: tool_use block (plain and streamed), then text after the tool_result', async () => {
      const tools = [{ name: 'get_weather', description: 'Current weather', input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] } }];
      const ask = { ...msg, tools, messages: [{ role: 'user', content: 'Weather in Berlin?' }] };
      const r = await json(await anthropic(ask));
      expect(r.stop_reason).toBe('tool_use');
      expect(r.content).toEqual([{ type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'get_weather', input: { location: 'Berlin' } }]);
      const events = (await sseEvents(await anthropic({ ...ask, stream: true }))).map((e) => JSON.parse(e.data));
      expect(events[1].content_block).toMatchObject({ type: 'tool_use', name: 'get_weather', input: {} });
      const partial = events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.partial_json).join('');
      expect(JSON.parse(partial)).toEqual({ location: 'Berlin' });
      expect(events.find((e) => e.type === 'message_delta').delta.stop_reason).toBe('tool_use');
      const after = await json(await anthropic({
        ...ask,
        messages: [...ask.messages, { role: 'assistant', content: r.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: r.content[0].id, content: 'Sunny' }] }],
      }));
      expect(after).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'The tool returned: Sunny' }] });
    });
  });

  describe('api key', () => {
    it('requires the bearer key on OpenAI routes and x-api-key on Anthropic routes', async () => {
      const wrong = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
      await expect(wrong.chat.completions.create(chat)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
      const none = await fetch(`${sim.url}/v1/models`);
      expect(none.status).toBe(401);
      expect((await json(none)).error.code).toBe('invalid_api_key');
      const a = await anthropic({ model: 'claude-sonnet-4', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, { 'x-api-key': 'bad' });
      expect(a.status).toBe(401);
      expect(await json(a)).toEqual({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
      const bearerOnAnthropic = await post('/v1/messages', { model: 'claude-sonnet-4', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, { 'anthropic-version': '2023-06-01' });
      expect(bearerOnAnthropic.status).toBe(401);
      sim.setOptions({ apiKey: undefined });
      try {
        expect((await fetch(`${sim.url}/v1/models`)).status).toBe(200);
      } finally {
        sim.setOptions({ apiKey: KEY });
      }
    });
  });

  describe('latency, pacing and faults', () => {
    it('waits latencyMs before answering and chunkDelayMs between stream chunks', async () => {
      sim.setOptions({ latencyMs: 120 });
      let t = Date.now();
      await client.chat.completions.create(chat);
      expect(Date.now() - t).toBeGreaterThanOrEqual(110);
      sim.setOptions({ latencyMs: 0, chunkDelayMs: 40, streamChunks: 3 });
      t = Date.now();
      const arrivals: number[] = [];
      for await (const c of await client.chat.completions.create({ ...chat, stream: true })) {
        arrivals.push(Date.now() - t);
        void c;
      }
      expect(arrivals).toHaveLength(5);
      expect(arrivals[4] - arrivals[0]).toBeGreaterThanOrEqual(4 * 40 - 15);
      sim.setOptions({ chunkDelayMs: 0 });
      t = Date.now();
      await post('/v1/chat/completions', chat, { 'x-sim-latency-ms': '80' }).then(json);
      expect(Date.now() - t).toBeGreaterThanOrEqual(70);
    });

    it("'status' answers in the API's error format, filtered by path and model, for count requests", async () => {
      sim.addFault({ kind: 'status', status: 503, count: 2, path: '/chat/completions', model: 'gpt-4o' });
      await expect(client.chat.completions.create({ ...chat, model: 'gpt-4o-mini' })).resolves.toBeDefined();
      await expect(client.embeddings.create({ model: 'text-embedding-3-small', input: 'x' })).resolves.toBeDefined();
      const res = await post('/v1/chat/completions', chat);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await json(res)).toEqual({ error: { message: 'Simulated upstream error 503.', type: 'server_error', param: null, code: null } });
      await expect(client.chat.completions.create(chat)).rejects.toMatchObject({ status: 503 });
      await expect(client.chat.completions.create(chat)).resolves.toBeDefined();

      sim.addFault({ kind: 'status', status: 429 });
      const a = await anthropic({ model: 'claude-sonnet-4', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
      expect(a.status).toBe(429);
      expect(await json(a)).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'Simulated upstream error 429.' } });
      await expect(client.chat.completions.create(chat)).rejects.toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
      sim.clearFaults();
      await expect(client.chat.completions.create(chat)).resolves.toBeDefined();
      expect(() => sim.addFault({ kind: 'status' })).toThrow(/status/);
    });

    it("'reset' drops the connection before any response", async () => {
      sim.addFault({ kind: 'reset', count: 1 });
      await expect(post('/v1/chat/completions', chat)).rejects.toThrow();
      await expect(client.chat.completions.create(chat)).resolves.toBeDefined();
      await expect(post('/v1/embeddings', { model: 'text-embedding-3-small', input: 'x' }, { 'x-sim-fault': 'reset' })).rejects.toThrow();
    });

    it("'reset-mid-stream' sends headers and a couple of chunks, then drops the connection", async () => {
      sim.addFault({ kind: 'reset-mid-stream', count: 2 });
      const res = await post('/v1/chat/completions', { ...chat, stream: true });
      expect(res.status).toBe(200);
      const got = await drain(res);
      expect(got.ended).toBe('error');
      expect(got.text.match(/^data: /gm)).toHaveLength(2);
      const seen: string[] = [];
      await expect((async () => {
        for await (const c of await client.chat.completions.create({ ...chat, stream: true })) seen.push(c.choices[0].delta.content ?? '');
      })()).rejects.toThrow();
      expect(seen.length).toBeGreaterThan(0);
      // A plain (non-stream) reply is cut in the middle of its body.
      const plain = await post('/v1/chat/completions', chat, { 'x-sim-fault': 'reset-mid-stream' });
      expect(plain.status).toBe(200);
      await expect(plain.text()).rejects.toThrow();
    });

    it("'stall' never answers and 'stall-mid-stream' stops after a few chunks; close() ends both", async () => {
      const other = await startSimulator();
      try {
        other.addFault({ kind: 'stall', path: '/chat/completions', count: 1 });
        const stalled = fetch(`${other.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chat) });
        const settled = stalled.then(() => 'answered', () => 'failed');
        // The window starts once the simulator has the request (and chose to stall it), not while it travels.
        await waitFor(() => other.requests.some((r) => r.path === '/v1/chat/completions'), { message: 'the stalled request to arrive' });
        const outcome = await Promise.race([settled, new Promise((r) => setTimeout(() => r('pending'), 300))]);
        expect(outcome).toBe('pending');

        other.addFault({ kind: 'stall-mid-stream', model: 'gpt-4o' });
        const res = await fetch(`${other.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ ...chat, stream: true }) });
        expect(res.status).toBe(200);
        const got = await drain(res, 300);
        expect(got.ended).toBe('timeout');
        expect(got.text.match(/^data: /gm)).toHaveLength(2);

        const viaHeader = fetch(`${other.url}/v1/models`, { headers: { 'x-sim-fault': 'stall' } });
        viaHeader.catch(() => {});
        while (!other.requests.some((r) => r.path === '/v1/models')) await new Promise((r) => setTimeout(r, 5));
        const t = Date.now();
        await other.close();
        expect(Date.now() - t).toBeLessThan(1000);
        await expect(stalled).rejects.toThrow();
        await expect(viaHeader).rejects.toThrow();
      } finally {
        await other.close();
      }
    });

    it('close() cuts a slow stream and a pending latency without waiting for them', async () => {
      const other = await startSimulator({ latencyMs: 10_000 });
      const pending = fetch(`${other.url}/v1/models`);
      pending.catch(() => {});
      // Close only once the request is in, waiting out its latency.
      await waitFor(() => other.requests.some((r) => r.path === '/v1/models'), { message: 'the request to reach the simulator' });
      const t = Date.now();
      await other.close();
      expect(Date.now() - t).toBeLessThan(1000);
      await expect(pending).rejects.toThrow();
    });
  });
});
