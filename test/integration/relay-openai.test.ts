// test modes: postgres, embedded
import { toFile } from 'openai';
import { TINY_PNG } from '../../src/simulator';
import { http } from '../helpers/harness';
import {
  embeddingCredits,
  holdsOf,
  IMAGE_CREDITS,
  ledgerOf,
  miniCredits,
  newKey,
  type RelayFixture,
  startRelayFixture,
  tokenRow,
} from '../helpers/relay-fixture';

/** The official openai SDK against the gateway, relayed to the upstream simulator, billed exactly. */
describe('relay: chat, streams, embeddings and images through the openai SDK', () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await startRelayFixture();
  });
  afterAll(async () => {
    await fx.close();
  });

  it('chat: the upstream answer, billed from its usage into the ledger and used_quota exactly', async () => {
    const { client, record } = await newKey(fx.gw, { name: 'chatkey' });
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello to the gateway' }], temperature: 0.5, max_tokens: 50 })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.choices[0].message.role).toBe('assistant');
    expect(typeof data.choices[0].message.content).toBe('string');
    const { prompt_tokens: p, completion_tokens: c } = data.usage!;
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_/);

    const rows = await ledgerOf(fx.gw, record.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ request_id: requestId, model: 'gpt-4o-mini', token_name: 'chatkey', prompt_tokens: p, completion_tokens: c, is_stream: false, channel: 'primary' });
    expect(rows[0].quota).toBe(miniCredits(p, c));
    const t = await tokenRow(fx.gw, record.id);
    expect(t.used_quota).toBe(miniCredits(p, c));
    expect(t.remain_quota).toBe(10_000_000 - miniCredits(p, c));
    expect(await holdsOf(fx.gw, record.id)).toBe(0);

    // The upstream got our channel key and the mapped model, never the client's key.
    const seen = fx.primary.requests[fx.primary.requests.length - 1];
    expect(seen.headers.authorization).toBe('Bearer key-primary');
    expect((seen.body as { temperature: number }).temperature).toBe(0.5);
  });

  it('tools, tool_choice, response_format, tool_calls / tool_call_id and unknown fields pass through unchanged', async () => {
    const { client } = await newKey(fx.gw);
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, tool_choice: 'required' });
    const call = first.choices[0].message.tool_calls![0];
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(call.type === 'function' && call.function.name).toBe('get_weather');
    const second = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' },
      ],
      tools,
      response_format: { type: 'json_object' },
      // @ts-expect-error an extra field the gateway does not know
      vendor_extra: { keep: [1, 'two'] },
    });
    expect(second.choices[0].message.content).toBeTruthy();
    const sent = fx.primary.requests[fx.primary.requests.length - 1].body as Record<string, unknown>;
    expect(sent.vendor_extra).toEqual({ keep: [1, 'two'] });
    expect(sent.response_format).toEqual({ type: 'json_object' });
    expect(sent.tools).toEqual(tools);
    expect((sent.messages as unknown[])[1]).toEqual({ role: 'assistant', content: null, tool_calls: [call] });
    expect((sent.messages as unknown[])[2]).toEqual({ role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' });
  });

  it('multimodal: text and several image_url parts (https and base64 data URI)', async () => {
    const { client } = await newKey(fx.gw);
    const r = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these images?' },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${TINY_PNG.toString('base64')}` } },
          ],
        },
      ],
    });
    expect(r.usage!.prompt_tokens).toBeGreaterThan(170);
  });

  it('stream without include_usage: chunks then [DONE], finish_reason null until the last, no usage chunk, billed', async () => {
    const { client, record } = await newKey(fx.gw);
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Tell me a short story' }], stream: true })
      .withResponse();
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_/);
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    for (const ch of chunks) {
      expect(ch.object).toBe('chat.completion.chunk');
      expect(ch.choices.length).toBe(1);
      expect('usage' in ch).toBe(false);
    }
    expect(chunks.slice(0, -1).every((ch) => ch.choices[0].finish_reason === null)).toBe(true);
    expect(chunks[chunks.length - 1].choices[0].finish_reason).toBe('stop');
    // The gateway asked the upstream for usage anyway, to bill.
    const sent = fx.primary.requests[fx.primary.requests.length - 1].body as { stream_options: unknown };
    expect(sent.stream_options).toEqual({ include_usage: true });
    const rows = await ledgerOf(fx.gw, record.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ request_id: requestId, is_stream: true });
    expect(rows[0].quota).toBe(miniCredits(rows[0].prompt_tokens, rows[0].completion_tokens));
    expect(rows[0].completion_tokens).toBeGreaterThan(0);
  });

  it('stream with include_usage: the usage chunk is forwarded and matches the ledger', async () => {
    const { client, record } = await newKey(fx.gw);
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Count to five' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: { prompt_tokens: number; completion_tokens: number } | null = null;
    let text = '';
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage).not.toBeNull();
    const rows = await ledgerOf(fx.gw, record.id);
    expect(rows[0]).toMatchObject({ prompt_tokens: usage!.prompt_tokens, completion_tokens: usage!.completion_tokens });
    expect(rows[0].quota).toBe(miniCredits(usage!.prompt_tokens, usage!.completion_tokens));
    expect((await tokenRow(fx.gw, record.id)).used_quota).toBe(rows[0].quota);
  });

  it('stream: each chunk is flushed as it arrives (no buffering)', async () => {
    fx.primary.setOptions({ chunkDelayMs: 150, streamChunks: 4 });
    try {
      const { key } = await newKey(fx.gw);
      const res = await fetch(`${fx.gw.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Tell me a long story please' }], stream: true }),
      });
      const arrivals: number[] = [];
      const reader = res.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const events = Buffer.from(value).toString().split('\n\n').filter(Boolean);
        for (const _ of events) arrivals.push(Date.now());
      }
      expect(arrivals.length).toBeGreaterThanOrEqual(6);
      // Spread over the upstream's pacing: the first and last events are far apart.
      expect(arrivals[arrivals.length - 1] - arrivals[0]).toBeGreaterThan(400);
    } finally {
      fx.primary.setOptions({ chunkDelayMs: 0, streamChunks: 5 });
    }
  });

  it('embeddings: float and base64, billed by the upstream prompt tokens', async () => {
    const { client, record } = await newKey(fx.gw);
    const f = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['hello world', 'second input'], encoding_format: 'float' });
    expect(f.data).toHaveLength(2);
    expect(Array.isArray(f.data[0].embedding)).toBe(true);
    // Asked for base64 explicitly, the SDK hands back the string: little-endian float32 of the same vector.
    const b = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hello world', encoding_format: 'base64' });
    const buf = Buffer.from(b.data[0].embedding as unknown as string, 'base64');
    expect(Array.from(new Float32Array(Uint8Array.from(buf).buffer))).toEqual(f.data[0].embedding);
    const raw = await http(fx.gw.baseUrl, 'POST', '/v1/embeddings', { auth: `Bearer ${(await newKey(fx.gw)).key}`, body: { model: 'text-embedding-3-small', input: 'hello world', encoding_format: 'base64' } });
    expect(typeof raw.body.data[0].embedding).toBe('string');
    const rows = await ledgerOf(fx.gw, record.id);
    expect(rows.map((r) => r.quota)).toEqual([embeddingCredits(f.usage.prompt_tokens), embeddingCredits(b.usage.prompt_tokens)]);
  });

  it('image generation: the spec fields and extras, billed per image returned', async () => {
    const { client, record } = await newKey(fx.gw);
    const r = await client.images.generate({
      model: 'dall-e-3',
      prompt: 'a lighthouse at dusk',
      n: 2,
      size: '1024x1792',
      quality: 'hd',
      style: 'vivid',
      // @ts-expect-error extras of some image models
      aspect_ratio: '16:9',
      seed: 42,
      prompt_upsampling: true,
      safety_tolerance: 2,
    });
    expect(r.created).toEqual(expect.any(Number));
    expect(r.data).toHaveLength(2);
    expect(r.data![0].url ?? r.data![0].b64_json).toBeTruthy();
    const sent = fx.primary.requests[fx.primary.requests.length - 1].body as Record<string, unknown>;
    expect(sent).toMatchObject({ aspect_ratio: '16:9', seed: 42, prompt_upsampling: true, safety_tolerance: 2 });
    const rows = await ledgerOf(fx.gw, record.id);
    expect(rows[0]).toMatchObject({ units: 2, model: 'dall-e-3' });
    expect(rows[0].quota).toBe(2 * IMAGE_CREDITS);
  });

  it('image edit: multipart with an image file and a mask; an image URL; a bad image is 400 invalid_image_file, not billed', async () => {
    const { client, record, key } = await newKey(fx.gw);
    const r = await client.images.edit({
      model: 'dall-e-3',
      image: await toFile(TINY_PNG, 'in.png', { type: 'image/png' }),
      mask: await toFile(TINY_PNG, 'mask.png', { type: 'image/png' }),
      prompt: 'add a red hat',
      n: 1,
      size: '1024x1024',
      response_format: 'b64_json',
    });
    expect(r.data![0].b64_json).toBeTruthy();
    const form = new FormData();
    form.set('model', 'dall-e-3');
    form.set('prompt', 'make it blue');
    form.set('image', 'https://example.com/photo.png');
    form.set('style', 'natural');
    const byUrl = await fetch(`${fx.gw.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(byUrl.status).toBe(200);
    const seen = fx.primary.requests[fx.primary.requests.length - 1].body as { fields: Record<string, string> };
    expect(seen.fields).toMatchObject({ image: 'https://example.com/photo.png', style: 'natural' });

    const bad = new FormData();
    bad.set('model', 'dall-e-3');
    bad.set('prompt', 'x');
    bad.set('image', new Blob([Buffer.from('this is not an image')], { type: 'image/png' }), 'fake.png');
    const res = await fetch(`${fx.gw.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: bad });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({ code: 'invalid_image_file', param: 'image', type: 'invalid_request_error' });
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    // A body that does not match its multipart boundary is the client's mistake: 400, not 500.
    const torn = await fetch(`${fx.gw.baseUrl}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'multipart/form-data; boundary=x' },
      body: 'name=x&remain_quota=1',
    });
    expect(torn.status).toBe(400);
    expect(((await torn.json()) as { error: unknown }).error).toMatchObject({ type: 'invalid_request_error' });
    const rows = await ledgerOf(fx.gw, record.id);
    expect(rows.map((x) => x.quota)).toEqual([IMAGE_CREDITS, IMAGE_CREDITS]);
  });

  it('Server-Timing: a plain answer says how long the upstream, the settle and the gateway took; a stream, the upstream until its first event', async () => {
    const { client, key } = await newKey(fx.gw);
    const timing = (h: string | null) => Object.fromEntries([...(h ?? '').matchAll(/(\w+);dur=(\d+\.\d{3})/g)].map((m) => [m[1], Number(m[2])]));
    fx.primary.setOptions({ latencyMs: 60 });
    try {
      const started = performance.now();
      const { response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      const seen = performance.now() - started;
      const header = response.headers.get('server-timing');
      expect(header).toMatch(/^upstream;dur=\d+\.\d{3}, billing;dur=\d+\.\d{3}, gateway;dur=\d+\.\d{3}$/);
      const t = timing(header);
      expect(t.upstream).toBeGreaterThanOrEqual(55);
      expect(t.billing).toBeGreaterThan(0);
      expect(t.upstream + t.billing + t.gateway).toBeLessThanOrEqual(seen);

      const { data: stream, response: streamed } = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true })
        .withResponse();
      for await (const chunk of stream) void chunk;
      const st = streamed.headers.get('server-timing');
      expect(st).toMatch(/^upstream;dur=\d+\.\d{3}, gateway;dur=\d+\.\d{3}$/);
      expect(timing(st).upstream).toBeGreaterThanOrEqual(55);
    } finally {
      fx.primary.setOptions({ latencyMs: 0 });
    }
    // No upstream answered (the key is wrong, the model unknown): no Server-Timing.
    const refused = await http(fx.gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${key}`, body: { model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] } });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.headers.get('server-timing')).toBeNull();
  });

  it('group multiplier: a vip key pays half, rounded up', async () => {
    const { client, record } = await newKey(fx.gw, { group: 'vip' });
    const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const rows = await ledgerOf(fx.gw, record.id);
    expect(rows[0].quota).toBe(miniCredits(r.usage!.prompt_tokens, r.usage!.completion_tokens, 0.5));
  });

  it('/api/log/: billed calls with filters and paging; /api/log/stat sums them; balance endpoints agree', async () => {
    const { client, record, acct } = await newKey(fx.gw, { name: 'logkey' });
    const other = await fx.gw.deps.tokens.create(acct.id, { name: 'otherkey', remain_quota: 1_000_000 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `call ${i}` }] }).withResponse();
      ids.push(response.headers.get('x-request-id')!);
    }
    await client.embeddings.create({ model: 'text-embedding-3-small', input: 'x' });
    const otherClient = (await import('openai')).default;
    await new otherClient({ apiKey: `sk-${other.key}`, baseURL: `${fx.gw.baseUrl}/v1`, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'other' }] });

    const auth = acct.systemToken;
    const all = await http(fx.gw.baseUrl, 'GET', '/api/log/?p=1&page_size=10', { auth });
    expect(all.status).toBe(200);
    expect(all.body.success).toBe(true);
    expect(all.body.data).toHaveLength(5);
    expect(all.headers.get('x-total-count')).toBe('5');
    for (const row of all.body.data) {
      expect(row).toEqual(expect.objectContaining({ id: expect.any(Number), created_at: expect.any(Number), token_name: expect.any(String), model_name: expect.any(String), quota: expect.any(Number), prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), use_time: expect.any(Number), is_stream: false, request_id: expect.stringMatching(/^req_/) }));
    }
    const mine = await http(fx.gw.baseUrl, 'GET', '/api/log/?token_name=logkey&model_name=gpt-4o-mini&page_size=2', { auth });
    expect(mine.body.data).toHaveLength(2);
    expect(mine.headers.get('x-total-count')).toBe('3');
    const page2 = await http(fx.gw.baseUrl, 'GET', '/api/log/?token_name=logkey&model_name=gpt-4o-mini&page_size=2&p=2', { auth });
    expect(page2.body.data).toHaveLength(1);
    expect([...mine.body.data, ...page2.body.data].map((r: { request_id: string }) => r.request_id).sort()).toEqual([...ids].sort());

    const now = Math.floor(Date.now() / 1000);
    const future = await http(fx.gw.baseUrl, 'GET', `/api/log/?start_timestamp=${now + 100}`, { auth });
    expect(future.body.data).toHaveLength(0);
    const window = await http(fx.gw.baseUrl, 'GET', `/api/log/?start_timestamp=${now - 100}&end_timestamp=${now + 100}`, { auth });
    expect(window.body.data).toHaveLength(5);

    const stat = await http(fx.gw.baseUrl, 'GET', '/api/log/stat?token_name=logkey', { auth });
    const ledger = await ledgerOf(fx.gw, record.id);
    const sum = ledger.reduce((s, r) => s + r.quota, 0);
    expect(stat.body.data.quota).toBe(sum);
    const t = await tokenRow(fx.gw, record.id);
    expect(t.used_quota).toBe(sum);

    // The OpenAI-compatible usage endpoint reports the same total (cents).
    const usage = await http(fx.gw.baseUrl, 'GET', '/v1/dashboard/billing/usage', { auth: `Bearer sk-${record.key}` });
    expect(usage.body.total_usage).toBeCloseTo((sum / 500_000) * 100, 10);

    // An API key is not a system token; another account sees none of these.
    expect((await http(fx.gw.baseUrl, 'GET', '/api/log/', { auth: `Bearer sk-${record.key}` })).status).toBe(401);
    const stranger = await newKey(fx.gw);
    const none = await http(fx.gw.baseUrl, 'GET', '/api/log/', { auth: stranger.acct.systemToken });
    expect(none.body.data).toEqual([]);
  });
});
