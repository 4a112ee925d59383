// test modes: postgres, embedded
import Anthropic from '@anthropic-ai/sdk';
import { FunctionCallingConfigMode, GoogleGenAI, type Content } from '@google/genai';
import OpenAI from 'openai';
import { ConfigStore } from '../../src/gateway-config/store';
import { validateGatewayConfig } from '../../src/gateway-config/schema';
import { startSimulator, type Simulator } from '../../src/simulator';
import { THOUGHT_TOKENS } from '../../src/simulator/gemini';
import { http, startGateway, type TestGateway } from '../helpers/harness';
import { holdsOf, ledgerOf, newKey } from '../helpers/relay-fixture';

/**
 * The Gemini API through the gateway with the official @google/genai SDK: natively on a `gemini` channel, and
 * translated on `openai` and `anthropic` channels; and the openai and Anthropic clients on a model a `gemini`
 * channel serves. Gemini 3's thought signatures must survive every tool round (the simulator refuses a function
 * call sent back without one, as Gemini 3 does). Credits are computed here from the prices below: 2 USD per 1M
 * tokens is 1 credit a token.
 */
const PRICES = {
  'gemini-3-pro-preview': { input_per_1m: '2', output_per_1m: '12', reasoning_per_1m: '24', cache_read_per_1m: '0.2' },
  'gemini-embedding-001': { input_per_1m: '2', kind: 'embedding' as const },
  'gpt-4.1': { input_per_1m: '2', output_per_1m: '8' },
  'text-embedding-3-small': { input_per_1m: '2', kind: 'embedding' as const },
  'claude-sonnet-4-5': { input_per_1m: '2', output_per_1m: '10' },
  'o4-mini': { input_per_1m: '2', output_per_1m: '8', reasoning: true },
};
const GEMINI = 'gemini-3-pro-preview';

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] },
};

describe('the Gemini API', () => {
  let sim: Simulator;
  let gw: TestGateway;
  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'key-sim' });
    const r = validateGatewayConfig(
      {
        channels: [
          { name: 'gemini', type: 'gemini', base_url: sim.url, key: 'key-sim', models: [GEMINI, 'gemini-embedding-001'] },
          { name: 'openai', type: 'openai', base_url: `${sim.url}/v1`, key: 'key-sim', models: ['gpt-4.1', 'text-embedding-3-small', 'o4-mini'] },
          { name: 'anthropic', type: 'anthropic', base_url: `${sim.url}/v1`, key: 'key-sim', models: ['claude-sonnet-4-5'] },
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
  });
  beforeEach(() => sim.requests.splice(0));

  // The SDK's own dispatcher reads undici's global, which jest's sandbox does not have: give it the plain fetch.
  const genai = (key: string) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gw.baseUrl, fetch: (url, init) => fetch(url, init) } });
  /** The simulator's own answer to the same request: what a native relay must give back. */
  const direct = async (model: string, action: string, body: unknown) =>
    (await fetch(`${sim.url}/v1beta/models/${model}:${action}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'key-sim' }, body: JSON.stringify(body) })).json();

  describe('natively on a gemini channel', () => {
    it('generateContent: the upstream answer, billed by usageMetadata with thoughts at the reasoning price', async () => {
      const { key, record } = await newKey(gw);
      const request = { contents: [{ role: 'user', parts: [{ text: 'Say hello to the gateway' }] }], generationConfig: { thinkingConfig: { thinkingBudget: 128 } } };
      const res = await genai(key).models.generateContent({ model: GEMINI, ...request, config: { thinkingConfig: { thinkingBudget: 128 } } });
      const expected = await direct(GEMINI, 'generateContent', request);
      expect(res.text).toBe(expected.candidates[0].content.parts[0].text);
      const u = res.usageMetadata!;
      expect(u.thoughtsTokenCount).toBe(THOUGHT_TOKENS);
      const [row] = await ledgerOf(gw, record.id);
      expect(row.prompt_tokens).toBe(u.promptTokenCount);
      expect(row.completion_tokens).toBe(u.candidatesTokenCount! + THOUGHT_TOKENS);
      expect(row.reasoning_tokens).toBe(THOUGHT_TOKENS);
      expect(row.quota).toBe(u.promptTokenCount! + 6 * u.candidatesTokenCount! + 12 * THOUGHT_TOKENS);
      expect(sim.requests.at(-1)!.path).toBe(`/v1beta/models/${GEMINI}:generateContent`);
      expect(sim.requests.at(-1)!.headers['x-goog-api-key']).toBe('key-sim');
    });

    it('generateContentStream: the chunks as sent, billed once by the last running total', async () => {
      const { key, record } = await newKey(gw);
      let text = '';
      let chunks = 0;
      let last: { promptTokenCount?: number; candidatesTokenCount?: number } | undefined;
      for await (const chunk of await genai(key).models.generateContentStream({ model: GEMINI, contents: 'Stream a greeting' })) {
        text += chunk.text ?? '';
        chunks++;
        if (chunk.usageMetadata) last = chunk.usageMetadata;
      }
      expect(chunks).toBeGreaterThan(1);
      const expected = await direct(GEMINI, 'generateContent', { contents: [{ role: 'user', parts: [{ text: 'Stream a greeting' }] }] });
      expect(text).toBe(expected.candidates[0].content.parts[0].text);
      const rows = await ledgerOf(gw, record.id);
      expect(rows).toHaveLength(1);
      expect(rows[0].completion_tokens).toBe(last!.candidatesTokenCount);
      expect(rows[0].quota).toBe(last!.promptTokenCount! + 6 * last!.candidatesTokenCount!);
      expect(await holdsOf(gw, record.id)).toBe(0);
    });

    it('countTokens: the upstream count, never billed; embedContent (sent as batchEmbedContents) billed by the tokens sent', async () => {
      const { key, record } = await newKey(gw);
      const ai = genai(key);
      const count = await ai.models.countTokens({ model: GEMINI, contents: 'How many tokens is this?' });
      expect(count.totalTokens).toBe((await direct(GEMINI, 'countTokens', { contents: [{ role: 'user', parts: [{ text: 'How many tokens is this?' }] }] })).totalTokens);
      expect(await ledgerOf(gw, record.id)).toHaveLength(0);
      const emb = await ai.models.embedContent({ model: 'gemini-embedding-001', contents: ['first text', 'second text'] });
      expect(emb.embeddings).toHaveLength(2);
      expect(emb.embeddings![0].values!.length).toBe(16);
      expect(sim.requests.at(-1)!.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
      const rows = await ledgerOf(gw, record.id);
      expect(rows).toHaveLength(1);
      expect(rows[0].prompt_tokens).toBeGreaterThan(0);
    });

    it('a function-calling round: the call comes back with its thought signature and the answer uses the result', async () => {
      const { key } = await newKey(gw);
      const ai = genai(key);
      const contents: Content[] = [{ role: 'user', parts: [{ text: 'What is the weather in Paris?' }] }];
      const config = { tools: [{ functionDeclarations: [weather as never] }], toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY } } };
      const first = await ai.models.generateContent({ model: GEMINI, contents, config });
      const call = first.candidates![0].content!.parts!.find((p) => p.functionCall)!;
      expect(call.functionCall!.name).toBe('get_weather');
      expect(call.thoughtSignature).toEqual(expect.any(String));
      contents.push(first.candidates![0].content!, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { forecast: 'sunny, 21 C' } } }] });
      const second = await ai.models.generateContent({ model: GEMINI, contents, config: { tools: config.tools } });
      expect(second.text).toContain('sunny, 21 C');
    });

    it('the same under /v1/, with the key in ?key= or as a bearer token; the streamed JSON array without alt=sse', async () => {
      const { key } = await newKey(gw);
      const body = { contents: [{ parts: [{ text: 'hi' }] }] };
      const viaQuery = await http(gw.baseUrl, 'POST', `/v1/models/${GEMINI}:generateContent?key=${key}`, { body });
      expect(viaQuery.status).toBe(200);
      expect(viaQuery.body.candidates[0].content.parts[0].text).toEqual(expect.any(String));
      const viaBearer = await http(gw.baseUrl, 'POST', `/v1beta/models/${GEMINI}:generateContent`, { body, auth: `Bearer ${key}` });
      expect(viaBearer.status).toBe(200);
      const array = await http(gw.baseUrl, 'POST', `/v1beta/models/${GEMINI}:streamGenerateContent`, { body, headers: { 'x-goog-api-key': key } });
      expect(array.status).toBe(200);
      expect(Array.isArray(array.body)).toBe(true);
      expect(array.body.at(-1).candidates[0].finishReason).toBe('STOP');
    });
  });

  describe('translated on chat channels', () => {
    it.each([
      ['gpt-4.1', '/v1/chat/completions'],
      ['claude-sonnet-4-5', '/v1/messages'],
    ])('%s: generateContent, a stream, countTokens counted locally, and a function-calling round', async (model, upstreamPath) => {
      const { key, record } = await newKey(gw);
      const ai = genai(key);
      const plain = await ai.models.generateContent({ model, contents: 'Say hello', config: { systemInstruction: 'Be brief', temperature: 0.2, maxOutputTokens: 200 } });
      expect(plain.text).toContain('Say hello');
      expect(plain.candidates![0].finishReason).toBe('STOP');
      expect(plain.usageMetadata!.promptTokenCount).toBeGreaterThan(0);
      expect(sim.requests.at(-1)!.path).toBe(upstreamPath);

      let streamed = '';
      let usage: { promptTokenCount?: number; candidatesTokenCount?: number } | undefined;
      for await (const c of await ai.models.generateContentStream({ model, contents: 'Say hello' })) {
        streamed += c.text ?? '';
        if (c.usageMetadata) usage = c.usageMetadata;
      }
      expect(streamed).toBe(plain.text);
      expect(usage!.candidatesTokenCount).toBeGreaterThan(0);

      const count = await ai.models.countTokens({ model, contents: 'How many tokens is this?' });
      expect(count.totalTokens).toBeGreaterThan(0);

      const contents: Content[] = [{ role: 'user', parts: [{ text: 'What is the weather in Paris?' }] }];
      const tools = [{ functionDeclarations: [weather as never] }];
      const first = await ai.models.generateContent({ model, contents, config: { tools, toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY } } } });
      const call = first.functionCalls![0];
      expect(call.name).toBe('get_weather');
      expect(call.args).toEqual({ city: expect.any(String) });
      contents.push(first.candidates![0].content!, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', id: call.id, response: { forecast: 'rain' } } }] });
      const second = await ai.models.generateContent({ model, contents, config: { tools } });
      expect(second.text).toContain('rain');

      // Four generations billed, the count not.
      expect(await ledgerOf(gw, record.id)).toHaveLength(4);
      expect(await holdsOf(gw, record.id)).toBe(0);
    });

    it('upper-case OpenAPI schemas become lower-case JSON Schema; a hosted tool offered is dropped and named', async () => {
      const { key } = await newKey(gw);
      const res = await fetch(`${gw.baseUrl}/v1beta/models/gpt-4.1:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
        body: JSON.stringify({
          contents: [{ role: 'user', parts: [{ text: 'Route this request' }] }],
          tools: [{ googleSearch: {} }, { functionDeclarations: [weather] }],
          generationConfig: {
            responseMimeType: 'application/json',
            responseJsonSchema: { type: 'object', properties: { model: { type: 'string' } } },
            thinkingConfig: { thinkingLevel: 'LOW' },
          },
        }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gateway-dropped-tools')).toBe('googleSearch');
      const sent = sim.requests.at(-1)!.body as Record<string, any>;
      expect(sent.tools).toEqual([{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }]);
      expect(sent.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'response', schema: { type: 'object', properties: { model: { type: 'string' } } } } });
      // gpt-4.1 does not reason: the thinking config is not sent.
      expect(sent.reasoning_effort).toBeUndefined();
    });

    it('thinkingConfig reaches a reasoning model as reasoning_effort, without the sampling parameters it refuses', async () => {
      const { key } = await newKey(gw);
      const res = await genai(key).models.generateContent({ model: 'o4-mini', contents: 'Think', config: { temperature: 0, thinkingConfig: { thinkingBudget: 20000 } } });
      expect(res.text).toEqual(expect.any(String));
      const sent = sim.requests.at(-1)!.body as Record<string, unknown>;
      expect(sent.reasoning_effort).toBe('high');
      expect(sent.temperature).toBeUndefined();
    });

    it('embedContent on an openai channel goes through its embeddings', async () => {
      const { key, record } = await newKey(gw);
      const emb = await genai(key).models.embedContent({ model: 'text-embedding-3-small', contents: 'embed me' });
      expect(emb.embeddings![0].values!.length).toBe(16);
      expect(sim.requests.at(-1)!.path).toBe('/v1/embeddings');
      expect((await ledgerOf(gw, record.id))[0].prompt_tokens).toBeGreaterThan(0);
    });
  });

  describe('other clients on a model a gemini channel serves', () => {
    const weatherTool = { type: 'function' as const, function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

    it('chat completions: a tool round keeps Gemini 3 thought signatures in the tool call id; streams translate', async () => {
      const { client, record } = await newKey(gw);
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'Be brief' }, { role: 'user', content: 'Weather in Paris?' }];
      const first = await client.chat.completions.create({ model: GEMINI, messages, tools: [weatherTool], tool_choice: 'required' });
      const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
      expect(first.choices[0].finish_reason).toBe('tool_calls');
      expect(call.id).toMatch(/^gts_/);
      messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'cloudy' });
      const second = await client.chat.completions.create({ model: GEMINI, messages, tools: [weatherTool] });
      expect(second.choices[0].message.content).toContain('cloudy');
      const sent = sim.requests.at(-1)!.body as { contents: Array<{ role: string; parts: Array<Record<string, unknown>> }>; systemInstruction: unknown };
      expect(sent.systemInstruction).toEqual({ parts: [{ text: 'Be brief' }] });
      expect(sent.contents[1].parts[0].thoughtSignature).toEqual(expect.any(String));
      expect(sent.contents[2].parts[0]).toEqual({ functionResponse: { name: 'get_weather', response: { result: 'cloudy' } } });

      let text = '';
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of await client.chat.completions.create({ model: GEMINI, messages: [{ role: 'user', content: 'stream please' }], stream: true, stream_options: { include_usage: true } })) {
        text += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text).toContain('stream please');
      const rows = await ledgerOf(gw, record.id);
      expect(rows).toHaveLength(3);
      expect(rows[2].completion_tokens).toBe(usage!.completion_tokens);
    });

    it('Messages: a tool round through the Anthropic client', async () => {
      const { key } = await newKey(gw);
      const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
      const tools = [{ name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];
      const msgs: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Rome?' }];
      const first = await anthropic.messages.create({ model: GEMINI, max_tokens: 256, messages: msgs, tools, tool_choice: { type: 'any' } });
      const use = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
      expect(first.stop_reason).toBe('tool_use');
      msgs.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'windy' }] });
      const second = await anthropic.messages.create({ model: GEMINI, max_tokens: 256, messages: msgs, tools });
      expect(second.content[0].type === 'text' && second.content[0].text).toContain('windy');
    });

    it('Responses: a tool round through the openai client', async () => {
      const { client } = await newKey(gw);
      const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', description: 'The weather in a city', parameters: weatherTool.function.parameters, strict: false }];
      const first = await client.responses.create({ model: GEMINI, input: 'Weather in Oslo?', tools, tool_choice: 'required', store: false });
      const call = first.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      expect(call.name).toBe('get_weather');
      const second = await client.responses.create({
        model: GEMINI,
        store: false,
        tools,
        input: [{ role: 'user', content: 'Weather in Oslo?' }, call, { type: 'function_call_output', call_id: call.call_id, output: 'snow' }],
      });
      expect(second.output_text).toContain('snow');
    });
  });

  describe('keys and errors, in Google\'s shape', () => {
    it('a missing or bad key is 401; an unknown model 404; a body without contents 400; each with x-request-id', async () => {
      const body = { contents: [{ parts: [{ text: 'hi' }] }] };
      const none = await http(gw.baseUrl, 'POST', `/v1beta/models/${GEMINI}:generateContent`, { body });
      expect(none.status).toBe(401);
      expect(none.body).toEqual({ error: { code: 401, message: expect.any(String), status: 'UNAUTHENTICATED' } });
      expect(none.headers.get('x-request-id')).toBeTruthy();
      const bad = await http(gw.baseUrl, 'POST', `/v1beta/models/${GEMINI}:generateContent`, { body, headers: { 'x-goog-api-key': 'sk-nope' } });
      expect(bad.status).toBe(401);
      const unknown = await http(gw.baseUrl, 'POST', '/v1beta/models/no-such-model:generateContent', { body, headers: { 'x-goog-api-key': (await newKey(gw)).key } });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.status).toBe('NOT_FOUND');
      const { key } = await newKey(gw, { models: GEMINI });
      const headers = { 'x-goog-api-key': key };
      const notAllowed = await http(gw.baseUrl, 'POST', '/v1beta/models/gpt-4.1:generateContent', { body, headers });
      expect(notAllowed.status).toBe(403);
      expect(notAllowed.body.error.status).toBe('PERMISSION_DENIED');
      const invalid = await http(gw.baseUrl, 'POST', `/v1beta/models/${GEMINI}:generateContent`, { body: { contents: 'nope' }, headers });
      expect(invalid.status).toBe(400);
      expect(invalid.body.error).toEqual({ code: 400, message: expect.stringContaining('contents'), status: 'INVALID_ARGUMENT' });
      const method = await http(gw.baseUrl, 'POST', `/v1beta/models/${GEMINI}:predictLongRunning`, { body, headers });
      expect(method.status).toBe(404);
      expect(method.body.error.status).toBe('NOT_FOUND');
    });

    it('an upstream refusal passes on with its status; the model list in Gemini\'s shape', async () => {
      const { key } = await newKey(gw);
      const refused = await http(gw.baseUrl, 'POST', `/v1beta/models/${GEMINI}:generateContent`, {
        body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }, { role: 'model', parts: [{ functionCall: { name: 'f', args: {} } }] }, { role: 'user', parts: [{ functionResponse: { name: 'f', response: {} } }] }] },
        headers: { 'x-goog-api-key': key },
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toContain('thought_signature');
      const list = await http(gw.baseUrl, 'GET', '/v1beta/models', { headers: { 'x-goog-api-key': key } });
      expect(list.body.models.map((m: { name: string }) => m.name)).toContain(`models/${GEMINI}`);
      const one = await http(gw.baseUrl, 'GET', '/v1beta/models/gemini-embedding-001', { headers: { 'x-goog-api-key': key } });
      expect(one.body.supportedGenerationMethods).toContain('embedContent');
      const v1 = await http(gw.baseUrl, 'GET', '/v1/models', { headers: { 'x-goog-api-key': key } });
      expect(v1.body.models.length).toBe(list.body.models.length);
    });
  });
});
