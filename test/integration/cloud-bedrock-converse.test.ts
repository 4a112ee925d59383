// test modes: postgres, embedded
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { toFile } from 'openai';
import { startGateway, startWorker, testGatewayConfig, type TestGateway } from '../helpers/harness';
import { holdsOf, ledgerOf, newKey } from '../helpers/relay-fixture';

/**
 * Bedrock's models other than Anthropic's, through Converse and ConverseStream (every front door translated to it),
 * and its embedding models through InvokeModel (Titan, Cohere): signed with Signature V4, which the simulator
 * verifies, billed by the dimensions Bedrock reports (cache reads included); throttling fails over.
 */
describe('bedrock channels: Converse and embeddings', () => {
  const AWS = { accessKeyId: 'AKIASIMULATOR0000002', secretAccessKey: 'sim-secret-access-key-converse-0123456' };
  const LLAMA = 'us.meta.llama4-maverick-17b-instruct-v1:0';
  const NOVA = 'amazon.nova-pro-v1:0';
  const TITAN = 'amazon.titan-embed-text-v2:0';
  const COHERE = 'cohere.embed-english-v3';
  let sim: Simulator;
  let gw: TestGateway;

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'unused', bedrock: AWS });
    const aws = { access_key_id: AWS.accessKeyId, secret_access_key: AWS.secretAccessKey };
    const bedrock = (name: string, models: string[], extra: Record<string, unknown>) => ({ name, type: 'bedrock' as const, region: 'us-west-2', base_url: sim.url, aws, models, ...extra });
    const config = testGatewayConfig({
      channels: [
        bedrock('bedrock-main', ['llama-4-maverick', 'titan-embed-text-v2', 'cohere-embed', 'claude-sonnet-4-5'], {
          model_mapping: { 'llama-4-maverick': LLAMA, 'titan-embed-text-v2': TITAN, 'cohere-embed': COHERE, 'claude-sonnet-4-5': 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' },
        }),
        bedrock('bedrock-nova-first', ['nova-pro'], { model_mapping: { 'nova-pro': NOVA }, priority: 10 }),
        bedrock('bedrock-nova-second', ['nova-pro'], { model_mapping: { 'nova-pro': NOVA }, region: 'us-east-1' }),
      ],
      models: {
        'llama-4-maverick': { input_per_1m: 2, output_per_1m: 8, cache_read_per_1m: 1 },
        'nova-pro': { input_per_1m: 2, output_per_1m: 8 },
        'claude-sonnet-4-5': { input_per_1m: 2, output_per_1m: 8, thinking: true },
        'titan-embed-text-v2': { input_per_1m: 2 },
        'cohere-embed': { input_per_1m: 2 },
      },
    });
    gw = await startGateway({ config: ConfigStore.fixed(config) });
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
  });

  /** Credits at 2/8/1 USD per 1M input/output/cache-read tokens (500,000 credits = 1 USD), a call rounded up to a whole credit. */
  const credits = (input: number, output: number, cacheRead = 0) => Math.ceil(input + 4 * output + cacheRead / 2);
  const sentTo = (action: string) => [...sim.requests].reverse().find((r) => r.url.endsWith(`/${action}`))!;

  it('chat completions through the OpenAI SDK: Converse plain, ConverseStream, tools and tool results, billed exactly', async () => {
    const { client, record } = await newKey(gw);
    const plain = await client.chat.completions.create({
      model: 'llama-4-maverick',
      max_tokens: 100,
      temperature: 0.5,
      stop: ['END'],
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello llama' },
      ],
    });
    expect(plain.choices[0].message.content).toContain('hello llama');
    const sent = sentTo('converse');
    expect(sent.url).toBe(`/model/${encodeURIComponent(LLAMA)}/converse`);
    expect(String(sent.headers.authorization)).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${AWS.accessKeyId}/\\d{8}/us-west-2/bedrock/aws4_request`));
    expect(sent.body).toEqual({
      messages: [{ role: 'user', content: [{ text: 'hello llama' }] }],
      system: [{ text: 'be brief' }],
      inferenceConfig: { maxTokens: 100, temperature: 0.5, stopSequences: ['END'] },
    });

    let text = '';
    let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
    for await (const chunk of await client.chat.completions.create({ model: 'llama-4-maverick', messages: [{ role: 'user', content: 'stream from llama' }], stream: true, stream_options: { include_usage: true } })) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toContain('stream from llama');
    expect(usage!.completion_tokens).toBeGreaterThan(0);
    expect(sentTo('converse-stream').url).toBe(`/model/${encodeURIComponent(LLAMA)}/converse-stream`);

    const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const call = await client.chat.completions.create({ model: 'llama-4-maverick', messages: [{ role: 'user', content: 'weather in Paris?' }], tools, tool_choice: 'required' });
    const toolCall = call.choices[0].message.tool_calls![0] as { id: string; function: { name: string; arguments: string } };
    expect(call.choices[0].finish_reason).toBe('tool_calls');
    expect(toolCall.function.name).toBe('get_weather');
    expect(JSON.parse(toolCall.function.arguments)).toHaveProperty('city');
    expect(sentTo('converse').body).toMatchObject({ toolConfig: { tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: tools[0].function.parameters } } }], toolChoice: { any: {} } } });

    const answer = await client.chat.completions.create({
      model: 'llama-4-maverick',
      tools,
      messages: [{ role: 'user', content: 'weather in Paris?' }, call.choices[0].message, { role: 'tool', tool_call_id: toolCall.id, content: 'sunny, 21C' }],
    });
    expect(answer.choices[0].message.content).toContain('sunny, 21C');
    expect((sentTo('converse').body as { messages: unknown[] }).messages[2]).toEqual({ role: 'user', content: [{ toolResult: { toolUseId: toolCall.id, content: [{ text: 'sunny, 21C' }] } }] });

    const rows = await ledgerOf(gw, record.id);
    const billed = [plain, { usage }, call, answer].map((r) => credits(r.usage!.prompt_tokens, r.usage!.completion_tokens));
    expect(rows.map((r) => r.quota)).toEqual(billed);
  });

  it('Messages clients (the Anthropic SDK) reach a Converse model: cache points billed as cache reads, images as bytes, streams', async () => {
    const { key, record } = await newKey(gw);
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const m = await anthropic.messages.create({
      model: 'llama-4-maverick',
      max_tokens: 64,
      system: [{ type: 'text', text: 'You are a careful assistant who reads long shared context. '.repeat(20), cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }, { type: 'text', text: 'what is this?' }] }],
    });
    expect(m.content[0]).toMatchObject({ type: 'text' });
    expect(m.usage.cache_read_input_tokens).toBeGreaterThan(0);
    const body = sentTo('converse').body as { system: unknown[]; messages: Array<{ content: unknown[] }> };
    expect(body.system[1]).toEqual({ cachePoint: { type: 'default' } });
    expect(body.messages[0].content[0]).toEqual({ image: { format: 'png', source: { bytes: png } } });

    const stream = anthropic.messages.stream({ model: 'llama-4-maverick', max_tokens: 64, messages: [{ role: 'user', content: 'stream as messages' }] });
    let text = '';
    stream.on('text', (t) => (text += t));
    const final = await stream.finalMessage();
    expect(text).toContain('stream as messages');
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.input_tokens).toBeGreaterThan(0);

    const rows = await ledgerOf(gw, record.id);
    expect(rows.map((r) => r.quota)).toEqual([
      credits(m.usage.input_tokens, m.usage.output_tokens, m.usage.cache_read_input_tokens!),
      credits(final.usage.input_tokens, final.usage.output_tokens),
    ]);
    expect(Number(rows[0].cache_read_tokens)).toBe(m.usage.cache_read_input_tokens);

    // Converse takes images as bytes only: an image by URL is the client's to fix, a 400 in the Messages format.
    const refused = await fetch(`${gw.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'llama-4-maverick', max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('bytes') } });
    expect(refused.headers.get('x-request-id')).toBeTruthy();

    // A server tool Converse cannot run is dropped and named; the request is served.
    const web = await fetch(`${gw.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'llama-4-maverick', max_tokens: 8, tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [{ role: 'user', content: 'search?' }] }),
    });
    expect(web.status).toBe(200);
    expect(web.headers.get('x-gateway-dropped-tools')).toBe('web_search_20250305');
  });

  it('Claude on the same channel keeps InvokeModel with the Messages body', async () => {
    const { key } = await newKey(gw);
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    await anthropic.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'claude' }] });
    expect([...sim.requests].reverse().find((r) => r.url.startsWith('/model/'))!.url).toBe(`/model/${encodeURIComponent('us.anthropic.claude-sonnet-4-5-20250929-v1:0')}/invoke`);
  });

  it("a Gemini client's thinkingConfig reaches a thinking Claude on Bedrock as Anthropic's thinking, temperature not refused", async () => {
    const { key } = await newKey(gw);
    const genai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gw.baseUrl, fetch: (url, init) => fetch(url, init) } });
    const r = await genai.models.generateContent({ model: 'claude-sonnet-4-5', contents: 'think first', config: { temperature: 0.3, thinkingConfig: { thinkingBudget: 2048 } } });
    expect(r.text).toEqual(expect.any(String));
    expect(sentTo('invoke').body).toMatchObject({ anthropic_version: 'bedrock-2023-05-31', thinking: { type: 'enabled', budget_tokens: 2048 } });
  });

  it('Gemini and Responses clients reach a Converse model too', async () => {
    const { key, client, record } = await newKey(gw);
    const genai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gw.baseUrl, fetch: (url, init) => fetch(url, init) } });
    const g = await genai.models.generateContent({ model: 'llama-4-maverick', contents: 'gemini to llama' });
    expect(g.text).toContain('gemini to llama');
    let streamed = '';
    for await (const chunk of await genai.models.generateContentStream({ model: 'llama-4-maverick', contents: 'gemini stream to llama' })) streamed += chunk.text ?? '';
    expect(streamed).toContain('gemini stream to llama');

    const r = await client.responses.create({ model: 'llama-4-maverick', input: 'responses to llama' });
    expect(r.output_text).toContain('responses to llama');
    expect(sentTo('converse').url).toBe(`/model/${encodeURIComponent(LLAMA)}/converse`);

    const rows = await ledgerOf(gw, record.id);
    expect(rows).toHaveLength(3);
    expect(rows[0].quota).toBe(credits(g.usageMetadata!.promptTokenCount!, g.usageMetadata!.candidatesTokenCount!));
    expect(rows[2].quota).toBe(credits(r.usage!.input_tokens, r.usage!.output_tokens));
  });

  it('embeddings through InvokeModel: Titan one text a call, Cohere in one call, billed by the tokens Bedrock counted', async () => {
    const { client, record } = await newKey(gw);
    const titan = await client.embeddings.create({ model: 'titan-embed-text-v2', input: ['first text to embed', 'second one'], dimensions: 256, encoding_format: 'float' });
    expect(titan.data.map((d) => d.index)).toEqual([0, 1]);
    expect(titan.data[0].embedding).toHaveLength(256);
    const titanCalls = sim.requests.filter((r) => r.url === `/model/${encodeURIComponent(TITAN)}/invoke`);
    expect(titanCalls.map((c) => c.body)).toEqual(expect.arrayContaining([{ inputText: 'first text to embed', dimensions: 256, normalize: true }, { inputText: 'second one', dimensions: 256, normalize: true }]));

    const cohere = await client.embeddings.create({ model: 'cohere-embed', input: ['a', 'b', 'c'], encoding_format: 'float' });
    expect(cohere.data).toHaveLength(3);
    expect(sentTo('invoke').body).toEqual({ texts: ['a', 'b', 'c'], input_type: 'search_document', truncate: 'END' });

    const rows = await ledgerOf(gw, record.id);
    expect(rows.map((r) => r.quota)).toEqual([titan.usage.prompt_tokens, cohere.usage.prompt_tokens].map((t) => credits(t, 0)));
    expect(titan.usage.prompt_tokens).toBeGreaterThan(0);

    // Claude does not embed: a 400 naming it, not a 500.
    await expect(client.embeddings.create({ model: 'claude-sonnet-4-5', input: 'x' })).rejects.toMatchObject({ status: 400 });
  });

  it('gateway-run batches reach Bedrock models too: Converse chat lines and Titan embedding lines, each billed once', async () => {
    const worker = await startWorker(gw);
    try {
      const { client, record } = await newKey(gw);
      const run = async (endpoint: '/v1/chat/completions' | '/v1/embeddings', lines: object[]) => {
        const file = await client.files.create({ file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n') + '\n'), 'in.jsonl'), purpose: 'batch' });
        let b = await client.batches.create({ input_file_id: file.id, endpoint, completion_window: '24h' });
        for (let i = 0; i < 600 && !['completed', 'failed', 'expired', 'cancelled'].includes(b.status); i++) {
          await new Promise((r) => setTimeout(r, 100));
          b = await client.batches.retrieve(b.id);
        }
        expect(b).toMatchObject({ status: 'completed', request_counts: { total: lines.length, completed: lines.length, failed: 0 } });
        return (await (await client.files.content(b.output_file_id!)).text()).trim().split('\n').map((l) => JSON.parse(l) as { custom_id: string; response: { body: Record<string, unknown> } });
      };
      const chat = await run('/v1/chat/completions', ['one', 'two'].map((t) => ({ custom_id: t, method: 'POST', url: '/v1/chat/completions', body: { model: 'llama-4-maverick', messages: [{ role: 'user', content: `batch ${t}` }] } })));
      expect(chat.map((l) => l.custom_id).sort()).toEqual(['one', 'two']);
      const emb = await run('/v1/embeddings', [{ custom_id: 'e', method: 'POST', url: '/v1/embeddings', body: { model: 'titan-embed-text-v2', input: 'batch embedding' } }]);
      expect((emb[0].response.body.data as unknown[]).length).toBe(1);
      const rows = await ledgerOf(gw, record.id);
      expect(rows).toHaveLength(3);
      const usage = [...chat, ...emb].map((l) => l.response.body.usage as { prompt_tokens: number; completion_tokens?: number });
      expect(rows.map((r) => r.quota).sort((a, b) => a - b)).toEqual(usage.map((u) => credits(u.prompt_tokens, u.completion_tokens ?? 0)).sort((a, b) => a - b));
    } finally {
      await worker.stop();
    }
  });

  it('an exception inside a stream (modelStreamErrorException) fails it for the client, unbilled and released, on Converse and on InvokeModel', async () => {
    const { client, key, record } = await newKey(gw);
    const got: unknown[] = [];
    const err = await (async () => {
      for await (const c of await client.chat.completions.create({ model: 'llama-4-maverick', messages: [{ role: 'user', content: 'sim:stream_exception please' }], stream: true })) got.push(c);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(got.length).toBeGreaterThan(0);

    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    const claude = anthropic.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'sim:stream_exception on claude' }] });
    await expect(claude.finalMessage()).rejects.toBeInstanceOf(Error);

    expect(await ledgerOf(gw, record.id)).toEqual([]);
    expect(await holdsOf(gw, record.id)).toBe(0);
    expect(gw.logs.text()).not.toContain(AWS.secretAccessKey);
  });

  it('throttling (ThrottlingException) fails over to the next channel; with none left the client gets a 429', async () => {
    const { client, record } = await newKey(gw);
    sim.addFault({ kind: 'status', status: 429, model: NOVA, count: 1 });
    const r = await client.chat.completions.create({ model: 'nova-pro', messages: [{ role: 'user', content: 'throttled first' }] });
    expect(r.choices[0].message.content).toContain('throttled first');
    expect(String(sentTo('converse').headers.authorization)).toContain('/us-east-1/bedrock/');
    expect((await ledgerOf(gw, record.id)).length).toBe(1);

    sim.addFault({ kind: 'status', status: 429, model: NOVA, count: 4 });
    await expect(client.chat.completions.create({ model: 'nova-pro', messages: [{ role: 'user', content: 'throttled everywhere' }] })).rejects.toMatchObject({ status: 429 });
    sim.clearFaults();
    expect((await ledgerOf(gw, record.id)).length).toBe(1);
    expect(gw.logs.text()).not.toContain(AWS.secretAccessKey);
  });
});
