// test modes: postgres, embedded
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigStore } from '../../src/gateway-config/store';
import { parseGatewayConfig } from '../../src/gateway-config';
import { videoAdapterOf } from '../../src/upstream/video';
import { newAccount, startGateway, type TestGateway } from '../helpers/harness';

// A channel's `headers:` (GATEWAY_CONFIG) go on every upstream request of the channel, whatever its type, after
// the gateway's own (an operator's Authorization replaces the gateway's, never doubles it); their values, which may
// come from ${VAR}, are never logged.
describe('channel headers', () => {
  let upstream: Server;
  let gw: TestGateway;
  let key: string;
  const seen: Array<{ path: string; headers: IncomingHttpHeaders; raw: string[] }> = [];

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      seen.push({ path: req.url ?? '', headers: req.headers, raw: req.rawHeaders });
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (req.url?.endsWith('/chat/completions')) {
          res.end(JSON.stringify({
            id: 'chatcmpl-h', object: 'chat.completion', created: 1, model: 'gpt-4o-mini',
            choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
          }));
        } else if (req.url?.endsWith('/messages')) {
          res.end(JSON.stringify({
            id: 'msg_h', type: 'message', role: 'assistant', model: 'claude-sonnet-4', content: [{ type: 'text', text: 'ok' }],
            stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 },
          }));
        } else {
          res.end(JSON.stringify({ output: { task_id: 'task-h', task_status: 'PENDING' }, request_id: 'r' }));
        }
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const config = parseGatewayConfig(
      [
        'channels:',
        `  - {name: chat, type: openai, base_url: "${url}/v1", key: gateway-key, models: [gpt-4o-mini],`,
        '     headers: {X-Tenant: "${TENANT_TOKEN}", Authorization: "Bearer ${TENANT_TOKEN}"}}',
        `  - {name: claude, type: anthropic, base_url: "${url}/v1", key: anthropic-key, models: [claude-sonnet-4], headers: {anthropic-beta: operator-beta}}`,
        `  - {name: wan, type: video-b, base_url: "${url}", key: video-key, models: [wan2.2-t2v-plus], headers: {X-DashScope-Async: enable}}`,
        'models:',
        '  gpt-4o-mini: {input_per_1m: 0.15, output_per_1m: 0.6}',
        '  claude-sonnet-4: {input_per_1m: 3, output_per_1m: 15}',
        '  wan2.2-t2v-plus: {per_second: 0.1}',
        '',
      ].join('\n'),
      { source: 'headers.yaml', env: { TENANT_TOKEN: 'tenant-token-5f3a9c' } },
    );
    gw = await startGateway({ config: ConfigStore.fixed(config) });
    const acct = await newAccount(gw.db);
    key = `sk-${(await gw.deps.tokens.create(acct.id, { name: 'headers', remain_quota: 10_000_000 })).key}`;
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise((r) => upstream?.close(r));
  });

  const count = (raw: string[], name: string) => raw.filter((h, i) => i % 2 === 0 && h.toLowerCase() === name).length;

  it('chat on an openai channel: the extra header arrives, and the operator\'s Authorization replaces the gateway\'s', async () => {
    const res = await fetch(`${gw.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const call = seen.find((s) => s.path.endsWith('/chat/completions'))!;
    expect(call.headers['x-tenant']).toBe('tenant-token-5f3a9c');
    expect(call.headers.authorization).toBe('Bearer tenant-token-5f3a9c');
    expect(count(call.raw, 'authorization')).toBe(1);
  });

  it('messages on an anthropic channel: the channel\'s header goes with the gateway\'s x-api-key', async () => {
    const res = await fetch(`${gw.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const call = seen.find((s) => s.path.endsWith('/messages'))!;
    expect(call.headers['x-api-key']).toBe('anthropic-key');
    expect(call.headers['anthropic-beta']).toBe('operator-beta');
  });

  it('a video-b submit carries the upstream\'s own name for the async header', async () => {
    const channel = gw.deps.config.current().channels.find((c) => c.name === 'wan')!;
    const id = await videoAdapterOf('video-b')!.submit(channel, { model: 'wan2.2-t2v-plus', input: { prompt: 'a cat' } }, new AbortController().signal);
    expect(id).toBe('task-h');
    const call = seen.find((s) => s.path.includes('video-synthesis'))!;
    expect(call.headers['x-dashscope-async']).toBe('enable');
    expect(call.headers['x-vendor-async']).toBe('enable');
    expect(call.headers.authorization).toBe('Bearer video-key');
  });

  it('never logs a header value', () => {
    expect(gw.logs.text()).not.toContain('tenant-token-5f3a9c');
  });
});
