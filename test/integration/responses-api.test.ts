// test modes: postgres, embedded
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { newAccount, startGateway, testGatewayConfig, type TestGateway } from '../helpers/harness';

/**
 * POST /v1/responses with the official openai SDK (`client.responses.create` and `.stream`): natively on an
 * `openai` channel with `responses_api: true`, and translated on an `openai` channel without it and on an
 * `anthropic` channel; tool calls (function and custom) included; billed by usage dimension.
 */
const NATIVE_USAGE = { input_tokens: 120, input_tokens_details: { cached_tokens: 100 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 20 }, total_tokens: 150 };

function nativeResponse(model: unknown) {
  return {
    id: 'resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b', object: 'response', created_at: 1, status: 'completed', model, future_field: { kept: true },
    output: [{ type: 'message', id: 'msg_n', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'native hello', annotations: [] }] }],
    usage: NATIVE_USAGE,
  };
}

describe('responses API through the gateway', () => {
  let sim: Simulator;
  let native: Server;
  let gw: TestGateway;
  let key: string;
  const nativeSeen: Array<{ method?: string; path?: string; body: Record<string, unknown> }> = [];
  let otherKey: string;
  let accountId: number;

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'sim', streamChunks: 3 });
    native = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
        nativeSeen.push({ method: req.method, path: req.url, body });
        const reply = (v: unknown, status = 200) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));
        if (req.url === '/v1/responses/input_tokens') return reply({ object: 'response.input_tokens', input_tokens: 42 });
        if (req.url === '/v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b' && req.method === 'GET') return reply(nativeResponse('gpt-native-upstream'));
        if (req.url === '/v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b' && req.method === 'DELETE') return reply({ id: 'resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b', object: 'response', deleted: true });
        if (req.url === '/v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b/cancel') return reply({ ...nativeResponse('gpt-native-upstream'), status: 'cancelled' });
        if (req.url?.startsWith('/v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b/input_items')) {
          return reply({ object: 'list', data: [{ id: 'msg_in', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }], first_id: 'msg_in', last_id: 'msg_in', has_more: false });
        }
        if (req.method !== 'POST' || req.url !== '/v1/responses') return reply({ error: { message: 'No response found.', type: 'invalid_request_error', code: null, param: null } }, 404);
        if (body.stream !== true) {
          return reply(nativeResponse(body.model));
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const r = nativeResponse(body.model);
        if (body.input === 'fail') {
          for (const e of [
            { type: 'response.created', sequence_number: 0, response: { ...r, status: 'in_progress', output: [], usage: null } },
            { type: 'response.failed', sequence_number: 1, response: { ...r, status: 'failed', output: [], usage: null, error: { code: 'server_error', message: 'x' } } },
          ]) {
            res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
          }
          res.end();
          return;
        }
        const events = [
          { type: 'response.created', sequence_number: 0, response: { ...r, status: 'in_progress', output: [], usage: null } },
          { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { type: 'message', id: 'msg_n', status: 'in_progress', role: 'assistant', content: [] } },
          { type: 'response.content_part.added', sequence_number: 2, item_id: 'msg_n', output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } },
          { type: 'response.output_text.delta', sequence_number: 3, item_id: 'msg_n', output_index: 0, content_index: 0, delta: 'native hello', logprobs: [] },
          { type: 'response.vendor_extension', sequence_number: 4, note: 'unknown event types pass through' },
          { type: 'response.completed', sequence_number: 5, response: r },
        ];
        for (const e of events) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
        res.end();
      });
    });
    await new Promise<void>((r) => native.listen(0, '127.0.0.1', r));
    const nativeUrl = `http://127.0.0.1:${(native.address() as AddressInfo).port}`;
    const config = testGatewayConfig({
      channels: [
        { name: 'native-responses', type: 'openai', base_url: `${nativeUrl}/v1`, key: 'n', models: ['gpt-native'], responses_api: true },
        { name: 'chat-only', type: 'openai', base_url: `${sim.url}/v1`, key: 'sim', models: ['gpt-4o-mini'] },
        { name: 'claude', type: 'anthropic', base_url: `${sim.url}/v1`, key: 'sim', models: ['claude-sonnet-4'] },
      ],
      models: {
        'gpt-native': { input_per_1m: 2, output_per_1m: 8, cache_read_per_1m: 0.5, reasoning_per_1m: 10 },
        'gpt-4o-mini': { input_per_1m: 0.15, output_per_1m: 0.6 },
        'claude-sonnet-4': { input_per_1m: 3, output_per_1m: 15 },
      },
    });
    gw = await startGateway({ config: ConfigStore.fixed(config) });
    const acct = await newAccount(gw.db);
    accountId = acct.id;
    key = `sk-${(await gw.deps.tokens.create(acct.id, { name: 'codex', remain_quota: 50_000_000 })).key}`;
    otherKey = `sk-${(await gw.deps.tokens.create((await newAccount(gw.db)).id, { name: 'other', remain_quota: 50_000_000 })).key}`;
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
    await new Promise((r) => native?.close(r));
  });

  const client = () => new OpenAI({ apiKey: key, baseURL: `${gw.baseUrl}/v1`, maxRetries: 0 });
  const ledger = async (rid: string | null) =>
    (await gw.db.query('SELECT quota, prompt_tokens, completion_tokens, cache_read_tokens, reasoning_tokens FROM ledger WHERE request_id = $1', [rid])).rows;

  it('native: the request passes as sent, the Response comes back whole, usage billed by dimension', async () => {
    nativeSeen.length = 0;
    const { data, response } = await client()
      .responses.create({ model: 'gpt-native', input: 'hi', store: false, reasoning: { effort: 'low' } } as never)
      .withResponse();
    expect(data.output_text).toBe('native hello');
    expect((data as unknown as { future_field: unknown }).future_field).toEqual({ kept: true });
    expect(nativeSeen[0]).toMatchObject({ method: 'POST', path: '/v1/responses', body: { model: 'gpt-native', input: 'hi', store: false, reasoning: { effort: 'low' } } });
    // (20 × 2 + 100 × 0.5 + 10 × 8 + 20 × 10) × 0.5 = 185
    expect(await ledger(response.headers.get('x-request-id'))).toEqual([{ quota: 185, prompt_tokens: 120, completion_tokens: 30, cache_read_tokens: 100, reasoning_tokens: 20 }]);
  });

  it('native stream: every event passes through, the terminal one after the settle', async () => {
    const types: string[] = [];
    let final: OpenAI.Responses.Response | null = null;
    // The raw stream (responses.stream() refuses event types it does not know; the gateway passes them on).
    const stream = await client().responses.create({ model: 'gpt-native', input: 'hi', stream: true });
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.completed') final = ev.response;
    }
    expect(types).toEqual(['response.created', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.vendor_extension', 'response.completed']);
    expect(final?.usage?.input_tokens).toBe(120);
  });

  it('native stream ending in response.failed: the client gets an error event, nothing is billed', async () => {
    const { data: stream, response } = await client().responses.create({ model: 'gpt-native', input: 'fail', stream: true }).withResponse();
    const seenTypes: string[] = [];
    for await (const ev of stream) seenTypes.push(ev.type);
    // The Responses wire format's `error` event (the SDK yields it as an event).
    expect(seenTypes).toEqual(['response.created', 'error']);
    expect(await ledger(response.headers.get('x-request-id'))).toEqual([]);
  });

  it.each([['gpt-4o-mini'], ['claude-sonnet-4']])('translated (%s): text, plain and streamed, billed', async (model) => {
    const { data, response } = await client().responses.create({ model, instructions: 'be brief', input: 'Say hello', store: false }).withResponse();
    expect(data.object).toBe('response');
    expect(data.status).toBe('completed');
    expect(data.output_text.length).toBeGreaterThan(0);
    expect(data.usage?.input_tokens).toBeGreaterThan(0);
    const rows = await ledger(response.headers.get('x-request-id'));
    expect(rows).toHaveLength(1);
    expect(rows[0].prompt_tokens).toBe(data.usage!.input_tokens);
    expect(rows[0].completion_tokens).toBe(data.usage!.output_tokens);

    const types = new Set<string>();
    let text = '';
    const stream = client().responses.stream({ model, input: [{ role: 'user', content: 'Say hello' }], store: false });
    for await (const ev of stream) {
      types.add(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
    }
    const final = await stream.finalResponse();
    for (const t of ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']) {
      expect(types).toContain(t);
    }
    expect(final.output_text).toBe(text);
    expect(final.usage?.output_tokens).toBeGreaterThan(0);
  });

  it('translated: function and custom tools become tool calls the client can answer, with the full history each turn', async () => {
    const tools = [
      { type: 'custom', name: 'apply_patch', description: 'apply a patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' } },
      { type: 'function', name: 'read_file', description: 'read a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
    ];
    const first = await client().responses.create({ model: 'gpt-4o-mini', input: 'Patch the file [[tool:apply_patch]]', tools, store: false } as never);
    const call = first.output.find((o) => o.type === 'custom_tool_call' || o.type === 'function_call') as { type: string; call_id: string; name: string };
    expect(call).toBeDefined();
    expect(call.name).toBe('apply_patch');
    expect(call.type).toBe('custom_tool_call');
    const second = await client().responses.create({
      model: 'gpt-4o-mini',
      store: false,
      tools,
      input: [
        { role: 'user', content: 'Patch the file [[tool:apply_patch]]' },
        call,
        { type: 'custom_tool_call_output', call_id: call.call_id, output: 'Done!' },
      ],
    } as never);
    expect(second.status).toBe('completed');
    const chatTurn = sim.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)?.body as { messages: Array<{ role: string }> };
    expect(chatTurn.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });

  it('native: a Response id routes back to its channel (previous_response_id, retrieve, input_items, cancel, delete), for its account only', async () => {
    const first = await client().responses.create({ model: 'gpt-native', input: 'hi' });
    expect(first.id).toMatch(/^resp_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(first.id).not.toBe('resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b');
    // Longer than the router's default limit of 100 characters for a path parameter: still routed.
    expect(first.id.length).toBeGreaterThan(100);

    nativeSeen.length = 0;
    const next = await client().responses.create({ model: 'gpt-native', input: 'and then?', previous_response_id: first.id });
    expect(nativeSeen[0].body.previous_response_id).toBe('resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b');
    expect(next.id).toBe(first.id); // the fake upstream answers the same upstream id every time

    const got = await client().responses.retrieve(first.id);
    expect(got.id).toBe(first.id);
    expect(got.output_text).toBe('native hello');
    const items = await client().responses.inputItems.list(first.id, { limit: 5 });
    expect(items.data.map((i) => i.id)).toEqual(['msg_in']);
    expect((await client().responses.cancel(first.id)).status).toBe('cancelled');
    await client().responses.delete(first.id);
    expect(nativeSeen.slice(1).map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b',
      'GET /v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b/input_items?limit=5',
      'POST /v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b/cancel',
      'DELETE /v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b',
    ]);

    // Another account's key, a forged id, an id of the upstream itself: not found, nothing forwarded.
    nativeSeen.length = 0;
    const other = new OpenAI({ apiKey: otherKey, baseURL: `${gw.baseUrl}/v1`, maxRetries: 0 });
    await expect(other.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.responses.create({ model: 'gpt-native', input: 'x', previous_response_id: first.id })).rejects.toMatchObject({ status: 400, param: 'previous_response_id' });
    await expect(client().responses.retrieve('resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b')).rejects.toMatchObject({ status: 404 });
    // The id with its seal's last two characters changed (to ones it does not already end in: 1 run in 4,096 it did).
    const tampered = `${first.id.slice(0, -2)}${first.id.endsWith('AA') ? 'BB' : 'AA'}`;
    await expect(client().responses.retrieve(tampered)).rejects.toMatchObject({ status: 404 });
    expect(nativeSeen).toEqual([]);
  });

  it('native stream: the Response id in created/completed events is the routable one', async () => {
    const ids = new Set<string>();
    const stream = await client().responses.create({ model: 'gpt-native', input: 'hi', stream: true });
    for await (const ev of stream) if ('response' in ev) ids.add(ev.response.id);
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    expect((await client().responses.retrieve(id)).id).toBe(id);
  });

  it('input_tokens: the native channel counts, a translated one counts locally, nothing is billed', async () => {
    // This account's rows only: other suites write to the same ledger at the same time.
    const count = async () => (await gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE account_id = $1', [accountId])).rows[0].n;
    const before = await count();
    const native = await client().responses.inputTokens.count({ model: 'gpt-native', input: 'count me' });
    expect(native).toMatchObject({ object: 'response.input_tokens', input_tokens: 42 });
    expect(nativeSeen.at(-1)).toMatchObject({ path: '/v1/responses/input_tokens', body: { model: 'gpt-native', input: 'count me' } });
    const local = await client().responses.inputTokens.count({ model: 'claude-sonnet-4', input: 'count me too', instructions: 'be brief' });
    expect(local.input_tokens).toBeGreaterThan(0);
    expect(await count()).toBe(before);
  });

  it('drops the hosted tools a translated channel cannot run and says so; refuses one the request forces', async () => {
    const offered = await client()
      .responses.create({ model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'web_search' }, { type: 'tool_search' } as never, { type: 'function', name: 'f', parameters: {}, strict: false }] })
      .withResponse();
    expect(offered.data.status).toBe('completed');
    expect(offered.response.headers.get('x-gateway-dropped-tools')).toBe('web_search,tool_search');
    const streamed = await client().responses.create({ model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'web_search' }], stream: true }).withResponse();
    for await (const _ of streamed.data);
    expect(streamed.response.headers.get('x-gateway-dropped-tools')).toBe('web_search');
    const plain = await client().responses.create({ model: 'gpt-4o-mini', input: 'x' }).withResponse();
    expect(plain.response.headers.get('x-gateway-dropped-tools')).toBeNull();
    await expect(client().responses.create({ model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } } as never)).rejects.toMatchObject({
      status: 400,
      param: 'tool_choice',
    });
  });

  it('refuses what a translated channel cannot do, by name', async () => {
    await expect(client().responses.create({ model: 'gpt-native', input: 'x', background: true })).rejects.toMatchObject({ status: 400, param: 'background' });
    await expect(client().responses.retrieve('resp_x', { stream: true } as never)).rejects.toMatchObject({ status: 400, param: 'stream' });
    await expect(client().responses.create({ model: 'gpt-4o-mini', input: 'x', previous_response_id: 'resp_1' })).rejects.toMatchObject({
      status: 400,
      param: 'previous_response_id',
    });
  });
});
