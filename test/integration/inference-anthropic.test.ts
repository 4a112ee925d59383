// test modes: postgres, embedded
import Anthropic, { AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError } from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { costOfTokens } from '../../src/domain/pricing/cost';
import { builtInGatewayConfig, ConfigStore } from '../../src/gateway-config';
import { SIMULATOR_MODELS, startSimulator, type Simulator } from '../../src/simulator';
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';
import { waitFor } from '../helpers/wait';

/**
 * POST /v1/messages with the official @anthropic-ai/sdk, and chat completions on a Claude model (an `anthropic`
 * channel) with the official openai SDK, over real HTTP against a gateway whose upstream is the simulator
 * (built-in config: `simulator` openai channel, `simulator-anthropic` anthropic channel, list prices).
 */
describe('inference: Anthropic Messages and Claude models', () => {
  let sim: Simulator;
  let gw: TestGateway;
  let config: ConfigStore;
  let acct: { id: number; systemToken: string };
  let key: string;

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'simulator', streamChunks: 4 });
    config = ConfigStore.fixed(builtInGatewayConfig(sim.url, SIMULATOR_MODELS));
    gw = await startGateway({ config });
    acct = await newAccount(gw.db);
    const record = await gw.deps.tokens.create(acct.id, {
      name: 'claude-key',
      remain_quota: 50_000_000,
      models: 'claude-sonnet-4,claude-3-5-haiku,gpt-4o-mini,claude-unknown-9',
    });
    key = `sk-${record.key}`;
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
  });
  beforeEach(() => sim.resetRecords());

  const anthropic = (opts: { apiKey?: string; headers?: Record<string, string> } = {}) =>
    new Anthropic({ apiKey: opts.apiKey ?? key, baseURL: gw.baseUrl, maxRetries: 0, defaultHeaders: opts.headers });
  const openai = () => new OpenAI({ apiKey: key, baseURL: `${gw.baseUrl}/v1`, maxRetries: 0 });

  async function ledger(requestId: string | null) {
    const res = await gw.db.query(
      'SELECT model, token_name, prompt_tokens, completion_tokens, quota, is_stream, channel FROM ledger WHERE request_id = $1',
      [requestId],
    );
    return res.rows;
  }
  async function ledgerCount() {
    const res = await gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE account_id = $1', [acct.id]);
    return res.rows[0].n as number;
  }
  const price = (model: string, p: number, c: number) => costOfTokens(config.current().models[model], { promptTokens: p, completionTokens: c });
  const upstream = (path: string) => sim.requests.filter((r) => r.path === path);

  it('messages.create: native shape, x-api-key and X-Vendor-Version forwarded upstream, ledger row exact', async () => {
    const client = anthropic({ headers: { 'X-Vendor-Version': '2024-10-22' } });
    const { data: msg, response } = await client.messages
      .create({ model: 'claude-sonnet-4', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hello' }] })
      .withResponse();
    expect(msg).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4',
      content: [{ type: 'text', text: expect.any(String) }],
      stop_reason: expect.stringMatching(/^(end_turn|max_tokens)$/),
      stop_sequence: null,
      usage: expect.objectContaining({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) }),
    });
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_[0-9a-f]{32}$/);

    const [up] = upstream('/v1/messages');
    expect(up.headers['x-api-key']).toBe('simulator');
    expect(up.headers['anthropic-version']).toBe('2024-10-22');
    expect(up.headers.authorization).toBeUndefined();
    expect(up.body).toEqual({ model: 'claude-sonnet-4', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hello' }] });

    const { input_tokens: p, output_tokens: c } = msg.usage;
    expect(await ledger(requestId)).toEqual([
      { model: 'claude-sonnet-4', token_name: 'claude-key', prompt_tokens: p, completion_tokens: c, quota: price('claude-sonnet-4', p, c), is_stream: false, channel: 'simulator-anthropic' },
    ]);
  });

  it('anthropic-version defaults to 2023-06-01; the key also works as Bearer', async () => {
    const res = await http(gw.baseUrl, 'POST', '/v1/messages', {
      auth: `Bearer ${key}`,
      body: { model: 'claude-3-5-haiku', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(res.status).toBe(200);
    expect(res.body.type).toBe('message');
    expect(upstream('/v1/messages')[0].headers['anthropic-version']).toBe('2023-06-01');
  });

  it('messages.stream + finalMessage(): native event stream, billed once from the stream usage', async () => {
    const client = anthropic();
    const stream = client.messages.stream({ model: 'claude-sonnet-4', max_tokens: 200, messages: [{ role: 'user', content: 'Tell me a story' }] });
    const texts: string[] = [];
    stream.on('text', (t) => texts.push(t));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: texts.join('') }]);
    expect(texts.length).toBeGreaterThan(1);
    expect(final.stop_reason).toMatch(/^(end_turn|max_tokens)$/);
    const requestId = (await stream.withResponse()).response.headers.get('x-request-id');
    const { input_tokens: p, output_tokens: c } = final.usage;
    expect(c).toBeGreaterThan(1);
    expect(upstream('/v1/messages')[0].body).toMatchObject({ stream: true });
    expect(await ledger(requestId)).toEqual([
      { model: 'claude-sonnet-4', token_name: 'claude-key', prompt_tokens: p, completion_tokens: c, quota: price('claude-sonnet-4', p, c), is_stream: true, channel: 'simulator-anthropic' },
    ]);
  });

  it('native errors: bad key, system token, allowlist, unknown model, missing max_tokens; none billed', async () => {
    const before = await ledgerCount();
    const ask = (client: Anthropic, body: Record<string, unknown>) =>
      client.messages.create({ max_tokens: 8, messages: [{ role: 'user', content: 'x' }], model: 'claude-sonnet-4', ...body } as never).catch((e: unknown) => e);

    const bad = await ask(anthropic({ apiKey: 'sk-not-a-key' }), {});
    expect(bad).toBeInstanceOf(AuthenticationError);
    expect((bad as AuthenticationError).error).toEqual({ type: 'error', error: { type: 'authentication_error', message: expect.any(String) } });
    expect((bad as AuthenticationError).headers?.get('x-request-id')).toMatch(/^req_/);

    const sys = await ask(anthropic({ apiKey: acct.systemToken }), {});
    expect(sys).toBeInstanceOf(AuthenticationError);
    expect((sys as AuthenticationError).status).toBe(401);

    const denied = await ask(anthropic(), { model: 'claude-opus-4' });
    expect(denied).toBeInstanceOf(PermissionDeniedError);
    expect((denied as PermissionDeniedError).error).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: 'This token is not authorized to use model claude-opus-4' },
    });

    const unknown = await ask(anthropic(), { model: 'claude-unknown-9' });
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect((unknown as NotFoundError).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });

    const missing = await ask(anthropic(), { max_tokens: undefined });
    expect(missing).toBeInstanceOf(BadRequestError);
    expect((missing as BadRequestError).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') } });

    const raw = await http(gw.baseUrl, 'POST', '/v1/messages', { headers: { 'x-api-key': key }, body: { model: 'claude-sonnet-4', messages: [{ role: 'user', content: 'x' }] } });
    expect(raw.status).toBe(400);
    expect(raw.body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') } });

    expect(upstream('/v1/messages')).toHaveLength(0);
    expect(await ledgerCount()).toBe(before);
  });

  it('an upstream 4xx is passed through in the native format and not billed; a 5xx fails over or ends 502 api_error', async () => {
    const before = await ledgerCount();
    sim.addFault({ kind: 'status', status: 529, count: 1, path: '/messages' });
    const err = await anthropic()
      .messages.create({ model: 'claude-sonnet-4', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 502, error: { type: 'error', error: { type: 'api_error' } } });
    sim.clearFaults();

    sim.addFault({ kind: 'status', status: 400, count: 1, path: '/messages' });
    const rejected = await anthropic()
      .messages.create({ model: 'claude-sonnet-4', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(rejected).toBeInstanceOf(BadRequestError);
    expect((rejected as BadRequestError).error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'Simulated upstream error 400.' } });
    sim.clearFaults();
    expect(await ledgerCount()).toBe(before);
  });

  it('count_tokens: an upstream 4xx reaches the client in the native format with x-request-id, never as a 500', async () => {
    sim.addFault({ kind: 'status', status: 400, count: 1, path: '/messages/count_tokens' });
    const { response, data } = await anthropic()
      .messages.countTokens({ model: 'claude-sonnet-4', messages: [{ role: 'user', content: 'x' }] })
      .withResponse()
      .then(
        (ok) => ({ response: ok.response, data: ok.data as unknown }),
        (e: unknown) => ({ response: null, data: e }),
      );
    sim.clearFaults();
    expect(response).toBeNull();
    expect(data).toBeInstanceOf(BadRequestError);
    expect((data as BadRequestError).error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'Simulated upstream error 400.' } });
    expect((data as BadRequestError).headers?.get('x-request-id')).toBeTruthy();
  });

  it('/v1/messages on an openai channel: translated both ways, plain and streamed, billed from usage', async () => {
    const client = anthropic();
    const { data: msg, response } = await client.messages
      .create({ model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Hello there' }] })
      .withResponse();
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', model: 'gpt-4o-mini', content: [{ type: 'text', text: expect.any(String) }] });
    const [up] = upstream('/v1/chat/completions');
    expect(up.headers.authorization).toBe('Bearer simulator');
    expect(up.body).toMatchObject({ model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Hello there' }] });
    const { input_tokens: p, output_tokens: c } = msg.usage;
    expect(p).toBeGreaterThan(0);
    expect(await ledger(response.headers.get('x-request-id'))).toEqual([
      { model: 'gpt-4o-mini', token_name: 'claude-key', prompt_tokens: p, completion_tokens: c, quota: price('gpt-4o-mini', p, c), is_stream: false, channel: 'simulator' },
    ]);

    const stream = client.messages.stream({ model: 'gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'Tell me a story' }] });
    const final = await stream.finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: expect.any(String) });
    const sp = final.usage.input_tokens;
    const sc = final.usage.output_tokens;
    expect(sp).toBeGreaterThan(0);
    expect(sc).toBeGreaterThan(0);
    const rid = (await stream.withResponse()).response.headers.get('x-request-id');
    expect(await ledger(rid)).toEqual([
      { model: 'gpt-4o-mini', token_name: 'claude-key', prompt_tokens: sp, completion_tokens: sc, quota: price('gpt-4o-mini', sp, sc), is_stream: true, channel: 'simulator' },
    ]);
  });

  it('openai SDK chat on a Claude model: translated to /messages and back, billed from the Anthropic usage', async () => {
    const { data: completion, response } = await openai()
      .chat.completions.create({
        model: 'claude-sonnet-4',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Say hello' },
        ],
        max_tokens: 40,
        stop: ['ZZZ'],
      })
      .withResponse();
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'claude-sonnet-4',
      choices: [{ index: 0, message: { role: 'assistant', content: expect.any(String) }, finish_reason: expect.stringMatching(/^(stop|length)$/) }],
    });
    const [up] = upstream('/v1/messages');
    expect(up.headers['x-api-key']).toBe('simulator');
    expect(up.headers['anthropic-version']).toBe('2023-06-01');
    expect(up.body).toEqual({ model: 'claude-sonnet-4', max_tokens: 40, system: 'Be brief.', stop_sequences: ['ZZZ'], messages: [{ role: 'user', content: 'Say hello' }] });
    const u = completion.usage!;
    expect(u.total_tokens).toBe(u.prompt_tokens + u.completion_tokens);
    expect(await ledger(response.headers.get('x-request-id'))).toEqual([
      {
        model: 'claude-sonnet-4',
        token_name: 'claude-key',
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        quota: price('claude-sonnet-4', u.prompt_tokens, u.completion_tokens),
        is_stream: false,
        channel: 'simulator-anthropic',
      },
    ]);
  });

  it('openai SDK streamed chat on a Claude model: chunks with the usage chunk, billed once', async () => {
    const { data: stream, response } = await openai()
      .chat.completions.create({ model: 'claude-sonnet-4', messages: [{ role: 'user', content: 'Tell me a story' }], stream: true, stream_options: { include_usage: true } })
      .withResponse();
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      if (chunk.choices[0]?.delta?.content) text += chunk.choices[0].delta.content;
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toMatch(/^(stop|length)$/);
    expect(usage).toBeDefined();
    expect(upstream('/v1/messages')[0].body).toMatchObject({ stream: true, max_tokens: 4096 });
    expect(await ledger(response.headers.get('x-request-id'))).toEqual([
      {
        model: 'claude-sonnet-4',
        token_name: 'claude-key',
        prompt_tokens: usage!.prompt_tokens,
        completion_tokens: usage!.completion_tokens,
        quota: price('claude-sonnet-4', usage!.prompt_tokens, usage!.completion_tokens),
        is_stream: true,
        channel: 'simulator-anthropic',
      },
    ]);
  });

  it('openai SDK tools on a Claude model: tool_calls out, tool results back in, plain and streamed', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    ];
    const client = openai();
    const first = await client.chat.completions.create({ model: 'claude-sonnet-4', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, tool_choice: 'required' });
    const call = first.choices[0].message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(call).toMatchObject({ id: expect.any(String), type: 'function', function: { name: 'get_weather' } });
    expect(() => JSON.parse(call.function.arguments)).not.toThrow();
    expect(upstream('/v1/messages')[0].body).toMatchObject({
      tools: [{ name: 'get_weather', description: 'Weather of a city', input_schema: (tools[0] as OpenAI.ChatCompletionFunctionTool).function.parameters }],
      tool_choice: { type: 'any' },
    });

    sim.resetRecords();
    const second = await client.chat.completions.create({
      model: 'claude-sonnet-4',
      tools,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        first.choices[0].message,
        { role: 'tool', tool_call_id: call.id, content: '18C and sunny' },
      ],
    });
    expect(second.choices[0].finish_reason).toMatch(/^(stop|length)$/);
    expect(second.choices[0].message.content).toEqual(expect.any(String));
    expect((upstream('/v1/messages')[0].body as { messages: unknown[] }).messages.slice(1)).toEqual([
      { role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: 'get_weather', input: JSON.parse(call.function.arguments) }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18C and sunny' }] },
    ]);

    const stream = await client.chat.completions.create({ model: 'claude-sonnet-4', messages: [{ role: 'user', content: 'Weather in Rome?' }], tools, tool_choice: 'required', stream: true });
    let args = '';
    let name = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      const tc = chunk.choices[0]?.delta?.tool_calls?.[0];
      if (tc?.function?.name) name = tc.function.name;
      if (tc?.function?.arguments) args += tc.function.arguments;
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
    }
    expect(name).toBe('get_weather');
    expect(finish).toBe('tool_calls');
    expect(JSON.parse(args)).toEqual(expect.any(Object));
  });

  it('a client that disconnects mid-stream is not billed and its hold is released', async () => {
    sim.setOptions({ chunkDelayMs: 100 });
    try {
      const before = await ledgerCount();
      const controller = new AbortController();
      const res = await fetch(`${gw.baseUrl}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ model: 'claude-sonnet-4', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Tell me a long story' }] }),
        signal: controller.signal,
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      await reader.read();
      controller.abort();
      // Once the gateway has seen the client go, the call is over: its hold (or its draw on a credit lease) is let go.
      await waitFor(
        async () => (await gw.db.query('SELECT count(*)::int AS n FROM quota_holds WHERE account_id = $1', [acct.id])).rows[0].n === 0,
        { message: 'the aborted call to release its hold' },
      );
      expect(await ledgerCount()).toBe(before);
    } finally {
      sim.setOptions({ chunkDelayMs: 0 });
    }
  });
});
