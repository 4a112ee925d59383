// test modes: postgres, embedded
import Anthropic from '@anthropic-ai/sdk';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { estimateMessagesPromptTokens } from '../../src/domain/relay/endpoints/messages';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { newAccount, startGateway, testGatewayConfig, type TestGateway } from '../helpers/harness';

/**
 * /v1/messages as today's agents send it (Claude Code: `?beta=true`, a `system` message inside `messages`,
 * `thinking: {type: 'adaptive'}`, `output_config`, `context_management`, `defer_loading` tools, a long
 * `anthropic-beta` list): on a native channel it reaches the upstream as sent; translated, what chat can carry is
 * mapped and the rest dropped. count_tokens and the Anthropic-shaped model list, through the official SDK.
 */
describe('messages: forward-compatible pass-through, count_tokens, Anthropic model list', () => {
  let upstream: Server;
  let sim: Simulator;
  let gw: TestGateway;
  let key: string;
  let accountId: number;
  const seen: Array<{ url: string; headers: IncomingHttpHeaders; body: Record<string, unknown> }> = [];

  const agentBody = {
    model: 'claude-native',
    max_tokens: 512,
    system: [{ type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Read the file.' }, { type: 'future_block', payload: { x: 1 } }] },
      { role: 'system', content: 'Reminder: be brief.' },
      { role: 'user', content: 'Go.' },
    ],
    thinking: { type: 'adaptive' },
    output_config: { effort: 'high' },
    context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
    tools: [{ name: 'Read', description: 'read a file', input_schema: { type: 'object', properties: {} }, defer_loading: true }],
    future_top_level_field: { anything: [1, 2, 3] },
  };
  const BETA = 'claude-code-20250219, interleaved-thinking-2025-05-14, context-management-2025-06-27';

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw) as Record<string, unknown>;
        seen.push({ url: req.url ?? '', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' });
        if (req.url?.startsWith('/v1/messages/count_tokens')) {
          res.end(JSON.stringify({ input_tokens: 4242, context_management: { original_input_tokens: 5000 } }));
          return;
        }
        res.end(
          JSON.stringify({
            id: 'msg_fc', type: 'message', role: 'assistant', model: body.model, content: [{ type: 'text', text: 'done' }],
            stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 30, output_tokens: 2 }, future_answer_field: true,
          }),
        );
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    sim = await startSimulator({ apiKey: 'sim' });
    const config = testGatewayConfig({
      channels: [
        { name: 'native', type: 'anthropic', base_url: `${upstreamUrl}/v1`, key: 'upstream-key', models: ['claude-native'] },
        { name: 'translated', type: 'openai', base_url: `${sim.url}/v1`, key: 'sim', models: ['gpt-4o-mini'] },
      ],
      models: { 'claude-native': { input_per_1m: 3, output_per_1m: 15 }, 'gpt-4o-mini': { input_per_1m: 0.15, output_per_1m: 0.6 } },
    });
    gw = await startGateway({ config: ConfigStore.fixed(config) });
    const acct = await newAccount(gw.db);
    accountId = acct.id;
    key = `sk-${(await gw.deps.tokens.create(acct.id, { name: 'agent', remain_quota: 10_000_000 })).key}`;
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
    await new Promise((r) => upstream?.close(r));
  });
  beforeEach(() => {
    seen.length = 0;
    sim.resetRecords();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gw.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01', ...headers },
      body: JSON.stringify(body),
    });

  it('native: the request reaches the upstream as sent (roles, blocks, fields, beta header and query string)', async () => {
    const res = await post('/v1/messages?beta=true', agentBody, { 'anthropic-beta': BETA });
    const answer = await res.json();
    expect(res.status).toBe(200);
    expect(answer).toMatchObject({ id: 'msg_fc', content: [{ type: 'text', text: 'done' }], future_answer_field: true });
    expect(seen).toHaveLength(1);
    expect(seen[0].url).toBe('/v1/messages?beta=true');
    expect(seen[0].headers['anthropic-beta']).toBe(BETA);
    expect(seen[0].body).toEqual(agentBody);
  });

  it('translated to chat: the system message stays in place, what chat cannot carry is dropped, and it is billed', async () => {
    const res = await post('/v1/messages?beta=true', { ...agentBody, model: 'gpt-4o-mini' }, { 'anthropic-beta': BETA });
    expect(res.status).toBe(200);
    const upstreamCall = sim.requests.find((r) => r.path === '/v1/chat/completions');
    const sent = upstreamCall?.body as { messages: Array<{ role: string; content: unknown }>; [k: string]: unknown };
    expect(sent.messages.map((m) => m.role)).toEqual(['system', 'user', 'system', 'user']);
    expect(sent.messages[1].content).toBe('Read the file.');
    expect(sent.messages[2].content).toBe('Reminder: be brief.');
    for (const f of ['thinking', 'output_config', 'context_management', 'future_top_level_field']) expect(sent[f]).toBeUndefined();
    const rid = res.headers.get('x-request-id');
    expect((await gw.db.query('SELECT 1 FROM ledger WHERE request_id = $1', [rid])).rowCount).toBe(1);
  });

  it('server tools offered on a translated channel are dropped and named; natively they pass; forcing one is a 400', async () => {
    const tools = [...agentBody.tools, { type: 'web_search_20250305', name: 'web_search', max_uses: 2 }];
    const translated = await post('/v1/messages', { ...agentBody, model: 'gpt-4o-mini', tools });
    expect(translated.status).toBe(200);
    expect(translated.headers.get('x-gateway-dropped-tools')).toBe('web_search');
    const sent = sim.requests.find((r) => r.path === '/v1/chat/completions')?.body as { tools: Array<{ function: { name: string } }> };
    expect(sent.tools.map((t) => t.function.name)).toEqual(['Read']);
    const streamed = await post('/v1/messages', { ...agentBody, model: 'gpt-4o-mini', tools, stream: true });
    await streamed.text();
    expect(streamed.headers.get('x-gateway-dropped-tools')).toBe('web_search');
    const native = await post('/v1/messages', { ...agentBody, tools });
    expect(native.headers.get('x-gateway-dropped-tools')).toBeNull();
    expect(seen.at(-1)!.body.tools).toEqual(tools);
    const forced = await post('/v1/messages', { ...agentBody, model: 'gpt-4o-mini', tools, tool_choice: { type: 'tool', name: 'web_search' } });
    expect(forced.status).toBe(400);
    expect((await forced.json()).error.message).toMatch(/^tool_choice: /);
  });

  it('holds for what a native channel reads even where a translation would drop it (a document block)', () => {
    const doc = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'A'.repeat(30_000) } };
    const withDoc = estimateMessagesPromptTokens({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'text', text: 'summarise' }, doc] }] } as never);
    expect(withDoc).toBeGreaterThanOrEqual(10_000);
  });

  it('still bounds what the contract bounds: temperature, max_tokens, an empty role', async () => {
    for (const bad of [{ temperature: 1.5 }, { max_tokens: 0 }, { messages: [{ role: '', content: 'x' }] }]) {
      const res = await post('/v1/messages', { ...agentBody, ...bad });
      expect(res.status).toBe(400);
      expect((await res.json()).type).toBe('error');
    }
  });

  it('count_tokens through the Anthropic SDK: native pass-through, a local count when translated; never billed', async () => {
    const client = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    const rows = async () => (await gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE account_id = $1', [accountId])).rows[0].n;
    const before = await rows();
    const native = await client.messages.countTokens({ model: 'claude-native', messages: [{ role: 'user', content: 'count me' }] });
    expect(native.input_tokens).toBe(4242);
    expect(seen[0].url).toBe('/v1/messages/count_tokens');
    expect(seen[0].body).toEqual({ model: 'claude-native', messages: [{ role: 'user', content: 'count me' }] });
    const local = await client.messages.countTokens({ model: 'gpt-4o-mini', system: 'be brief', messages: [{ role: 'user', content: 'count me too' }] });
    expect(local.input_tokens).toBeGreaterThan(0);
    expect(sim.requests).toHaveLength(0);
    expect(await rows()).toBe(before);
    expect((await gw.db.query("SELECT count(*)::int AS n FROM quota_holds WHERE account_id = $1 AND reason <> 'lease'", [accountId])).rows[0].n).toBe(0);
  });

  it('/v1/models answers the Anthropic list shape to Anthropic clients and the OpenAI shape to OpenAI clients', async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    const ids: string[] = [];
    for await (const m of anthropic.models.list()) {
      expect(m.type).toBe('model');
      expect(typeof m.display_name).toBe('string');
      ids.push(m.id);
    }
    expect(ids.sort()).toEqual(['claude-native', 'gpt-4o-mini']);
    const openai = new OpenAI({ apiKey: key, baseURL: `${gw.baseUrl}/v1`, maxRetries: 0 });
    const list = await openai.models.list();
    expect(list.data.map((m) => m.object)).toEqual(['model', 'model']);
  });
});
