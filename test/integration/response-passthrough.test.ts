// test modes: postgres, embedded
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigStore } from '../../src/gateway-config/store';
import { validateGatewayConfig } from '../../src/gateway-config/schema';
import { TINY_PNG_BASE64 } from '../../src/simulator';
import { http, newAccount, startGateway, type TestGateway } from '../helpers/harness';
import { PRICES } from '../helpers/relay-fixture';

const EXTRA = { vendor_trace: { id: 'abc', hops: [1, 2] }, service_tier: 'default' };

/** An upstream whose answers carry fields no schema of the gateway lists, at the top level and inside items. */
function answer(path: string, body: { model?: string }): unknown {
  const usage = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, prompt_tokens_details: { cached_tokens: 0 } };
  if (path.endsWith('/chat/completions')) {
    return {
      id: 'chatcmpl-x', object: 'chat.completion', created: 1, model: body.model, ...EXTRA,
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null, annotations: [{ type: 'x' }] }, logprobs: null, finish_reason: 'stop', extra_choice: 7 }],
      usage,
    };
  }
  if (path.endsWith('/embeddings')) {
    return { object: 'list', model: body.model, ...EXTRA, data: [{ object: 'embedding', index: 0, embedding: [0.5, 0.25], extra_item: true }], usage: { prompt_tokens: 5, total_tokens: 5 } };
  }
  return { created: 1, ...EXTRA, data: [{ b64_json: TINY_PNG_BASE64, extra_item: true }], usage: { total_tokens: 1 } };
}

/**
 * Response schemas are documentation only: an upstream field the gateway's schemas do not list reaches the
 * client unchanged on every relayed JSON body (chat, embeddings, images).
 */
describe('relayed bodies keep every upstream field', () => {
  let upstream: Server;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer(req.url ?? '', raw ? JSON.parse(raw) : {})));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    const v = validateGatewayConfig(
      {
        channels: [{ name: 'up', type: 'openai', base_url: url, key: 'k', models: ['gpt-4o-mini', 'text-embedding-3-small', 'dall-e-3'] }],
        models: { 'gpt-4o-mini': PRICES['gpt-4o-mini'], 'text-embedding-3-small': PRICES['text-embedding-3-small'], 'dall-e-3': PRICES['dall-e-3'] },
      },
      'test',
    );
    if (!v.ok) throw new Error(v.problems.join('\n'));
    gw = await startGateway({ config: ConfigStore.fixed(v.config) });
    const acct = await newAccount(gw.db);
    key = `sk-${(await gw.deps.tokens.create(acct.id, { remain_quota: 10_000_000 })).key}`;
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise((r) => upstream?.close(r));
  });

  it('chat completions', async () => {
    const res = await http(gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${key}`, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject(EXTRA);
    expect(res.body.choices[0].extra_choice).toBe(7);
    expect(res.body.choices[0].message.annotations).toEqual([{ type: 'x' }]);
    expect(res.body.usage.prompt_tokens_details).toEqual({ cached_tokens: 0 });
  });

  it('embeddings', async () => {
    const res = await http(gw.baseUrl, 'POST', '/v1/embeddings', { auth: `Bearer ${key}`, body: { model: 'text-embedding-3-small', input: 'x' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject(EXTRA);
    expect(res.body.data[0].extra_item).toBe(true);
  });

  it('image generations', async () => {
    const res = await http(gw.baseUrl, 'POST', '/v1/images/generations', { auth: `Bearer ${key}`, body: { model: 'dall-e-3', prompt: 'x', response_format: 'b64_json' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject(EXTRA);
    expect(res.body.data[0].extra_item).toBe(true);
  });
});
