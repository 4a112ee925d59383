// test modes: postgres, embedded
import { APIError, BadRequestError } from 'openai';
import { BillingService } from '../../src/domain/billing/billing-service';
import { createRelayEngine } from '../../src/domain/relay/engine';
import { chatEndpoint } from '../../src/domain/relay/endpoints/chat';
import { ResponseIds } from '../../src/domain/relay/response-ids';
import { estimatePromptTokens, estimateTokens } from '../../src/domain/relay/metering';
import { countTokens } from '../../src/simulator';
import { request as httpRequest } from 'node:http';
import { holdsOf, ledgerOf, miniCredits, newKey, type RelayFixture, startRelayFixture, tokenRow } from '../helpers/relay-fixture';
import { createHoldRepository } from '../../src/db/repositories/holds';

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hello there' }] };

/** Routing, failover and cooldown across two channels, and what is (not) billed when things break. */
describe('relay: failover, cooldown and unbilled failures', () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await startRelayFixture({ cooldown: { failures: 3, cooldownMs: 60_000 } });
  });
  afterEach(() => {
    fx.primary.clearFaults();
    fx.backup.clearFaults();
    fx.gw.deps.engine.cooldown.recordSuccess('primary');
    fx.gw.deps.engine.cooldown.recordSuccess('backup');
  });
  afterAll(async () => {
    await fx.close();
  });

  const last = (sim: RelayFixture['primary']) => sim.requests[sim.requests.length - 1];

  it.each([
    ['503', { kind: 'status' as const, status: 503 }],
    ['500', { kind: 'status' as const, status: 500 }],
    ['429', { kind: 'status' as const, status: 429 }],
    ['a connection reset', { kind: 'reset' as const }],
    ['a timeout', { kind: 'stall' as const }],
  ])('%s from the first channel: the second serves, billed once on the second', async (_name, fault) => {
    fx.primary.addFault({ ...fault, count: 1 });
    const { client, record } = await newKey(fx.gw);
    const before = fx.backup.requests.length;
    const r = await client.chat.completions.create(chat);
    expect(r.choices[0].message.content).toBeTruthy();
    expect(fx.backup.requests.length).toBe(before + 1);
    expect(last(fx.backup).headers.authorization).toBe('Bearer key-backup');
    const rows = await ledgerOf(fx.gw, record.id);
    expect(rows).toHaveLength(1);
    expect(rows[0].channel).toBe('backup');
  });

  it('a 400 from the upstream is not failed over: the client gets a 400 in the OpenAI format, sanitised, not billed', async () => {
    fx.primary.addFault({ kind: 'status', status: 400, count: 1 });
    const { client, record } = await newKey(fx.gw);
    const before = fx.backup.requests.length;
    const err = (await client.chat.completions.create(chat).catch((e: unknown) => e)) as BadRequestError;
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({ type: 'invalid_request_error', message: expect.any(String) });
    expect(JSON.stringify(err.error)).not.toContain('127.0.0.1');
    expect(JSON.stringify(err.error)).not.toContain('key-primary');
    expect(fx.backup.requests.length).toBe(before);
    expect(await ledgerOf(fx.gw, record.id)).toEqual([]);
    const t = await tokenRow(fx.gw, record.id);
    expect(t).toEqual({ remain_quota: 10_000_000, used_quota: 0 });
    expect(await holdsOf(fx.gw, record.id)).toBe(0);
  });

  it('every channel failing: 502 in the OpenAI format, nothing billed, hold released, no upstream detail in logs', async () => {
    fx.primary.addFault({ kind: 'status', status: 503 });
    fx.backup.addFault({ kind: 'reset' });
    const { client, record } = await newKey(fx.gw);
    const err = (await client.chat.completions.create(chat).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
    expect(await ledgerOf(fx.gw, record.id)).toEqual([]);
    expect(await tokenRow(fx.gw, record.id)).toEqual({ remain_quota: 10_000_000, used_quota: 0 });
    const logs = fx.gw.logs.text();
    expect(logs).toContain('upstream attempt failed');
    expect(logs).not.toContain('key-primary');
    expect(logs).not.toContain('key-backup');
    expect(logs).not.toContain(fx.primary.url);
    expect(logs).not.toContain(fx.backup.url);
  });

  it('cooldown: after 3 consecutive failures the first channel is skipped for the window', async () => {
    fx.primary.addFault({ kind: 'status', status: 503, count: 3 });
    const { client } = await newKey(fx.gw);
    for (let i = 0; i < 3; i++) await client.chat.completions.create(chat);
    const primaryBefore = fx.primary.requests.length;
    const backupBefore = fx.backup.requests.length;
    for (let i = 0; i < 3; i++) await client.chat.completions.create(chat);
    expect(fx.primary.requests.length).toBe(primaryBefore);
    expect(fx.backup.requests.length).toBe(backupBefore + 3);
    expect(fx.gw.deps.engine.cooldown.isCooling('primary')).toBe(true);
  });

  it('a stream failing before its first chunk fails over; a stream reset after the first byte is not retried and not billed', async () => {
    fx.primary.addFault({ kind: 'status', status: 503, count: 1 });
    const { client, record } = await newKey(fx.gw);
    let text = '';
    for await (const c of await client.chat.completions.create({ ...chat, stream: true })) text += c.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect((await ledgerOf(fx.gw, record.id))[0].channel).toBe('backup');

    const other = await newKey(fx.gw);
    fx.primary.addFault({ kind: 'reset-mid-stream', count: 1 });
    const backupBefore = fx.backup.requests.length;
    const got: unknown[] = [];
    const err = await (async () => {
      for await (const c of await other.client.chat.completions.create({ ...chat, stream: true })) got.push(c);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(got.length).toBeGreaterThan(0);
    expect(fx.backup.requests.length).toBe(backupBefore);
    expect(await ledgerOf(fx.gw, other.record.id)).toEqual([]);
    expect(await tokenRow(fx.gw, other.record.id)).toEqual({ remain_quota: 10_000_000, used_quota: 0 });
    expect(await holdsOf(fx.gw, other.record.id)).toBe(0);
  });

  it('a client that disconnects mid-stream: upstream aborted, hold released, nothing billed or logged in the ledger', async () => {
    fx.primary.setOptions({ chunkDelayMs: 200, streamChunks: 10 });
    try {
      const { key, record } = await newKey(fx.gw);
      const url = new URL(`${fx.gw.baseUrl}/v1/chat/completions`);
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest(
          { hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } },
          (res) => {
            expect(res.statusCode).toBe(200);
            expect(res.headers['x-request-id']).toMatch(/^req_/);
            res.once('data', () => {
              req.destroy();
              resolve();
            });
          },
        );
        req.on('error', () => undefined);
        req.end(JSON.stringify({ ...chat, stream: true }));
        setTimeout(() => reject(new Error('no data')), 5000).unref();
      });
      for (let i = 0; i < 50 && (await holdsOf(fx.gw, record.id)) > 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await holdsOf(fx.gw, record.id)).toBe(0);
      expect(await ledgerOf(fx.gw, record.id)).toEqual([]);
      expect(await tokenRow(fx.gw, record.id)).toEqual({ remain_quota: 10_000_000, used_quota: 0 });
      for (let i = 0; i < 50 && !fx.gw.logs.text().includes('write_response_body_failed'); i++) await new Promise((r) => setTimeout(r, 50));
      expect(fx.gw.logs.text()).toContain('write_response_body_failed');
    } finally {
      fx.primary.setOptions({ chunkDelayMs: 0, streamChunks: 5 });
    }
  });

  it('an upstream that reports no usage is billed from the local count (conservative: never below the real one)', async () => {
    const { key, record } = await newKey(fx.gw);
    const principal = await fx.gw.deps.keyAuth.authenticate(key);
    const content = 'Hello, this answer has no usage block at all.';
    const billing = new BillingService(createHoldRepository(fx.gw.db), { leases: false });
    const engine = createRelayEngine({
      config: fx.gw.deps.config,
      billing,
      responseIds: new ResponseIds('test'),
      adapters: {
        chat: {
          openai: {
            chat: async () => ({ body: { id: 'chatcmpl-1', created: 1, model: 'm', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }, usage: null }),
            chatStream: async () => {
              throw new Error('unused');
            },
          },
        },
        messages: {},
        gemini: {},
        responses: () => undefined,
        video: () => null,
        audio: {},
        rerank: {},
      },
    });
    const requestId = `req_local_${record.id}`;
    await engine.unary(chatEndpoint, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say something without usage' }] }, { key: principal, requestId, signal: new AbortController().signal });
    await billing.close();
    const rows = await ledgerOf(fx.gw, record.id);
    expect(rows).toHaveLength(1);
    const p = estimatePromptTokens({ messages: [{ role: 'user', content: 'Say something without usage' }] });
    const c = estimateTokens(content);
    expect(rows[0]).toMatchObject({ request_id: requestId, prompt_tokens: p, completion_tokens: c, quota: miniCredits(p, c) });
    expect(c).toBeGreaterThanOrEqual(countTokens(content));
  });
});

