// test modes: postgres, embedded
import Anthropic from '@anthropic-ai/sdk';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import OpenAI from 'openai';
import { ConfigStore } from '../../src/gateway-config/store';
import { newAccount, startGateway, testGatewayConfig, type TestGateway } from '../helpers/harness';

/**
 * Provider traffic replayed byte for byte by a fake upstream, relayed natively and translated, read with the
 * official SDKs: the usage the client sees keeps every dimension, and the ledger bills each one to the credit, at
 * configured prices and by the fallbacks. The streams are the project's own fixtures (test/fixtures/provider-wire,
 * written from the providers' documented wire formats, with the usage to bill in its manifest), and, when
 * PROVIDER_RECORDINGS_DIR names a folder of recordings of live provider calls, those too (their expected usage is
 * written out by hand below, per file). The credits are computed here.
 */
const FIXTURES = path.resolve(__dirname, '../fixtures/provider-wire');
const RECORDINGS = process.env.PROVIDER_RECORDINGS_DIR ? path.resolve(process.env.PROVIDER_RECORDINGS_DIR) : null;

interface Expected {
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  reasoning: number;
}

interface Recording {
  /** The folder the file is in: the fixtures', or PROVIDER_RECORDINGS_DIR. */
  dir: string;
  file: string;
  wire: 'anthropic' | 'openai';
  stream: boolean;
  usage: Expected;
}

const u = (input: number, output: number, more: Partial<Expected> = {}): Expected => ({ input, output, cacheRead: 0, cacheWrite: 0, reasoning: 0, ...more });

/** Recordings of live calls, by file name in PROVIDER_RECORDINGS_DIR; the usage read off each by hand. */
const RECORDED: Record<string, Omit<Recording, 'dir'>> = {
  'rec-anthropic-text-stream': { file: 'anthropic/anthropic-text.chunks.txt', wire: 'anthropic', stream: true, usage: u(12, 30) },
  'rec-anthropic-text': { file: 'anthropic/anthropic-text.json', wire: 'anthropic', stream: false, usage: u(12, 29) },
  'rec-anthropic-json-tool-stream': { file: 'anthropic/anthropic-json-tool.2.chunks.txt', wire: 'anthropic', stream: true, usage: u(849, 47) },
  'rec-anthropic-json-tool': { file: 'anthropic/anthropic-json-tool.1.json', wire: 'anthropic', stream: false, usage: u(1151, 87) },
  'rec-anthropic-tool-no-args': { file: 'anthropic/anthropic-tool-no-args.chunks.txt', wire: 'anthropic', stream: true, usage: u(565, 48) },
  'rec-anthropic-thinking': { file: 'anthropic/anthropic-clear-thinking.1.chunks.txt', wire: 'anthropic', stream: true, usage: u(69, 53) },
  'rec-anthropic-prompt-cache': {
    file: 'anthropic/anthropic-code-execution-20260120-prompt-cache.1.chunks.txt',
    wire: 'anthropic',
    stream: true,
    usage: u(6, 198, { cacheRead: 6289, cacheWrite: 3337 }),
  },
  'rec-anthropic-refusal': { file: 'anthropic/anthropic-refusal.chunks.txt', wire: 'anthropic', stream: true, usage: u(18, 5) },
  'rec-anthropic-delta-input': { file: 'anthropic/anthropic-message-delta-input-tokens.chunks.txt', wire: 'anthropic', stream: true, usage: u(61, 2) },
  'rec-openai-text-stream': { file: 'openai/openai-text.chunks.txt', wire: 'openai', stream: true, usage: u(16, 300) },
  'rec-azure-reasoning': { file: 'openai/azure-model-router.1.chunks.txt', wire: 'openai', stream: true, usage: u(15, 78, { reasoning: 64 }) },
  'rec-deepseek-tool-stream': {
    file: 'openai/deepseek-tool-call.chunks.txt',
    wire: 'openai',
    stream: true,
    usage: u(19, 83, { cacheRead: 320, reasoning: 39 }),
  },
  'rec-deepseek-text': { file: 'openai/deepseek-text.json', wire: 'openai', stream: false, usage: u(13, 300) },
  'rec-openai-cached': { file: 'openai/openai-chat-cached-input-tokens-11178.attempt-2.json', wire: 'openai', stream: false, usage: u(138, 1, { cacheRead: 9984 }) },
  // xAI counts reasoning outside completion_tokens (26 + 255 of total 588): every counted token is billed.
  'rec-xai-tool': { file: 'openai/xai-tool-call.json', wire: 'openai', stream: false, usage: u(63, 281, { cacheRead: 244, reasoning: 255 }) },
};

function loadCases(): Record<string, Recording> {
  const manifest = JSON.parse(readFileSync(path.join(FIXTURES, 'manifest.json'), 'utf8')) as Record<string, Omit<Recording, 'dir'>>;
  const cases: Record<string, Recording> = {};
  for (const [id, c] of Object.entries(manifest)) cases[id] = { ...c, dir: FIXTURES };
  if (RECORDINGS === null) {
    console.info('provider recordings: PROVIDER_RECORDINGS_DIR is not set; replaying the project\'s fixtures only');
    return cases;
  }
  let found = 0;
  for (const [id, c] of Object.entries(RECORDED)) {
    if (!existsSync(path.join(RECORDINGS, c.file))) continue;
    cases[id] = { ...c, dir: RECORDINGS };
    found++;
  }
  console.info(`provider recordings: ${found} of ${Object.keys(RECORDED).length} known recordings found in ${RECORDINGS}`);
  return cases;
}

const CASES = loadCases();

/** Prices in hundredths of a USD per 1M tokens (exact integers for the expected credits). */
const FULL = { input: 300, output: 1500, cacheRead: 30, cacheWrite: 375, reasoning: 2000 };
const FALLBACK_ONLY = { input: 300, output: 1500, cacheRead: 300, cacheWrite: 300, reasoning: 1500 };

/** ceil(Σ tokens × price(USD per 1M) × 500,000 / 1,000,000) with prices in cents: ceil(Σ / 200). */
function credits(e: Expected, p: typeof FULL): number {
  const sum = e.input * p.input + e.cacheRead * p.cacheRead + e.cacheWrite * p.cacheWrite + (e.output - e.reasoning) * p.output + e.reasoning * p.reasoning;
  return Math.ceil(sum / 200);
}

function lines(rec: Recording): string[] {
  return readFileSync(path.join(rec.dir, rec.file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
}

/** Serves each recording as its provider sent it; the request's model names the recording (`@fallback` stripped). */
function startRecordedUpstream(): Promise<{ url: string; server: Server; seen: Array<{ path: string; body: Record<string, unknown> }> }> {
  const seen: Array<{ path: string; body: Record<string, unknown> }> = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      seen.push({ path: req.url ?? '', body });
      const rec = CASES[String(body.model).replace(/@fallback$/, '')];
      if (!rec) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such recording"}}');
        return;
      }
      if (!rec.stream) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(readFileSync(path.join(rec.dir, rec.file)));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const line of lines(rec)) {
        if (rec.wire === 'anthropic') res.write(`event: ${(JSON.parse(line) as { type: string }).type}\ndata: ${line}\n\n`);
        else res.write(`data: ${line}\n\n`);
      }
      if (rec.wire === 'openai') res.write('data: [DONE]\n\n');
      res.end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, seen })));
}

describe('provider recordings: relayed natively and translated, billed per usage dimension', () => {
  let upstream: Awaited<ReturnType<typeof startRecordedUpstream>>;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startRecordedUpstream();
    const ids = Object.keys(CASES);
    const anthropicIds = ids.filter((id) => CASES[id].wire === 'anthropic');
    const openaiIds = ids.filter((id) => CASES[id].wire === 'openai');
    const all = (list: string[]) => [...list, ...list.map((id) => `${id}@fallback`)];
    const models: Record<string, Record<string, number>> = {};
    for (const id of ids) {
      models[id] = { input_per_1m: 3, output_per_1m: 15, cache_read_per_1m: 0.3, cache_write_per_1m: 3.75, reasoning_per_1m: 20 };
      models[`${id}@fallback`] = { input_per_1m: 3, output_per_1m: 15 };
    }
    const config = testGatewayConfig({
      channels: [
        { name: 'anthropic-native', type: 'anthropic', base_url: `${upstream.url}/v1`, key: 'k', models: all(anthropicIds) },
        { name: 'openai-native', type: 'openai', base_url: `${upstream.url}/v1`, key: 'k', models: all(openaiIds) },
      ],
      models,
    });
    gw = await startGateway({ config: ConfigStore.fixed(config) });
    const acct = await newAccount(gw.db);
    key = `sk-${(await gw.deps.tokens.create(acct.id, { name: 'recordings', remain_quota: 100_000_000 })).key}`;
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise((r) => upstream?.server.close(r));
  });

  const openai = () => new OpenAI({ apiKey: key, baseURL: `${gw.baseUrl}/v1`, maxRetries: 0 });
  const anthropic = () => new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });

  async function ledgerRow(requestId: string | null) {
    const res = await gw.db.query(
      `SELECT quota, prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, shortfall
       FROM ledger WHERE request_id = $1`,
      [requestId],
    );
    expect(res.rows).toHaveLength(1);
    return res.rows[0];
  }

  async function expectBilled(requestId: string | null, e: Expected, prices: typeof FULL) {
    expect(await ledgerRow(requestId)).toEqual({
      quota: credits(e, prices),
      prompt_tokens: e.input + e.cacheRead + e.cacheWrite,
      completion_tokens: e.output,
      cache_read_tokens: e.cacheRead,
      cache_write_tokens: e.cacheWrite,
      reasoning_tokens: e.reasoning,
      shortfall: 0,
    });
  }

  /** What a chat client must see of a usage: all input in prompt_tokens, cache reads and reasoning in the details. */
  function expectChatUsage(usage: OpenAI.CompletionUsage | undefined | null, e: Expected) {
    expect(usage).toMatchObject({ prompt_tokens: e.input + e.cacheRead + e.cacheWrite, completion_tokens: e.output });
    if (e.cacheRead) expect(usage?.prompt_tokens_details?.cached_tokens).toBe(e.cacheRead);
    if (e.reasoning) expect(usage?.completion_tokens_details?.reasoning_tokens).toBe(e.reasoning);
  }

  /** What a Messages client must see: input_tokens without the cache, reads and writes beside it. */
  function expectMessagesUsage(usage: Anthropic.Usage | Anthropic.MessageDeltaUsage, e: Expected) {
    expect(usage.input_tokens).toBe(e.input);
    expect(usage.output_tokens).toBe(e.output);
    expect(usage.cache_read_input_tokens ?? 0).toBe(e.cacheRead);
    expect(usage.cache_creation_input_tokens ?? 0).toBe(e.cacheWrite);
  }

  const anthropicCases = Object.entries(CASES).filter(([, r]) => r.wire === 'anthropic');
  const openaiCases = Object.entries(CASES).filter(([, r]) => r.wire === 'openai');

  describe.each([
    ['configured prices', '', FULL],
    ['fallback prices', '@fallback', FALLBACK_ONLY],
  ] as const)('%s', (_label, suffix, prices) => {
    it.each(anthropicCases)('%s through /v1/messages (native)', async (id, rec) => {
      const client = anthropic();
      const params = { model: `${id}${suffix}`, max_tokens: 1024, messages: [{ role: 'user' as const, content: 'replay' }] };
      if (rec.stream) {
        const { data: stream, response } = await client.messages.create({ ...params, stream: true }).withResponse();
        const types: string[] = [];
        let last: Anthropic.MessageDeltaUsage | null = null;
        for await (const ev of stream) {
          types.push(ev.type);
          if (ev.type === 'message_delta') last = ev.usage;
        }
        // Every event the provider sent reaches the client, in order (the SDK does not yield pings; see below).
        expect(types).toEqual(lines(rec).map((l) => (JSON.parse(l) as { type: string }).type).filter((t) => t !== 'ping'));
        expect(last!.output_tokens).toBe(rec.usage.output);
        await expectBilled(response.headers.get('x-request-id'), rec.usage, prices);
      } else {
        const { data: msg, response } = await client.messages.create(params).withResponse();
        expect(msg.content).toEqual(JSON.parse(readFileSync(path.join(rec.dir, rec.file), 'utf8')).content);
        expectMessagesUsage(msg.usage, rec.usage);
        await expectBilled(response.headers.get('x-request-id'), rec.usage, prices);
      }
    });

    it.each(anthropicCases)('%s through /v1/chat/completions (translated)', async (id, rec) => {
      const client = openai();
      const params = { model: `${id}${suffix}`, messages: [{ role: 'user' as const, content: 'replay' }] };
      if (rec.stream) {
        const { data: stream, response } = await client.chat.completions
          .create({ ...params, stream: true, stream_options: { include_usage: true } })
          .withResponse();
        let usage: OpenAI.CompletionUsage | null | undefined = null;
        const args = new Map<number, string>();
        for await (const chunk of stream) {
          if (chunk.usage) usage = chunk.usage;
          for (const t of chunk.choices[0]?.delta?.tool_calls ?? []) args.set(t.index, (args.get(t.index) ?? '') + (t.function?.arguments ?? ''));
        }
        // Tool arguments always parse, a call without arguments included.
        for (const a of args.values()) expect(() => JSON.parse(a)).not.toThrow();
        expectChatUsage(usage, rec.usage);
        await expectBilled(response.headers.get('x-request-id'), rec.usage, prices);
      } else {
        const { data: completion, response } = await client.chat.completions.create(params).withResponse();
        expectChatUsage(completion.usage, rec.usage);
        await expectBilled(response.headers.get('x-request-id'), rec.usage, prices);
      }
    });

    it.each(openaiCases)('%s through /v1/chat/completions (native)', async (id, rec) => {
      const client = openai();
      const params = { model: `${id}${suffix}`, messages: [{ role: 'user' as const, content: 'replay' }] };
      if (rec.stream) {
        const { data: stream, response } = await client.chat.completions
          .create({ ...params, stream: true, stream_options: { include_usage: true } })
          .withResponse();
        let usage: OpenAI.CompletionUsage | null | undefined = null;
        let chunks = 0;
        for await (const chunk of stream) {
          chunks++;
          if (chunk.usage) usage = chunk.usage;
        }
        expect(chunks).toBe(lines(rec).length);
        // Native: the provider's usage object reaches the client as it was sent.
        expect(usage).toEqual((JSON.parse(lines(rec).at(-1)!) as { usage: unknown }).usage);
        await expectBilled(response.headers.get('x-request-id'), rec.usage, prices);
      } else {
        const { data: completion, response } = await client.chat.completions.create(params).withResponse();
        expect(completion.usage).toEqual(JSON.parse(readFileSync(path.join(rec.dir, rec.file), 'utf8')).usage);
        await expectBilled(response.headers.get('x-request-id'), rec.usage, prices);
      }
    });

    it.each(openaiCases)('%s through /v1/messages (translated)', async (id, rec) => {
      const client = anthropic();
      const params = { model: `${id}${suffix}`, max_tokens: 1024, messages: [{ role: 'user' as const, content: 'replay' }] };
      if (rec.stream) {
        const { data: stream, response } = await client.messages.create({ ...params, stream: true }).withResponse();
        let last: Anthropic.MessageDeltaUsage | null = null;
        for await (const ev of stream) if (ev.type === 'message_delta') last = ev.usage;
        expectMessagesUsage(last!, rec.usage);
        await expectBilled(response.headers.get('x-request-id'), rec.usage, prices);
      } else {
        const { data: msg, response } = await client.messages.create(params).withResponse();
        expectMessagesUsage(msg.usage, rec.usage);
        await expectBilled(response.headers.get('x-request-id'), rec.usage, prices);
      }
    });
  });

  it('relays every event of a native Messages stream byte for byte, pings included', async () => {
    const res = await fetch(`${gw.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'fx-anthropic-tool-no-args', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'x' }] }),
    });
    const body = await res.text();
    const data = body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
    expect(data).toEqual(lines(CASES['fx-anthropic-tool-no-args']));
  });

  it('bills the prompt-cache stream at Anthropic-style cache rates: 6,271 credits, where prompt + completion alone give 1,337', async () => {
    const { data: stream, response } = await anthropic()
      .messages.create({ model: 'fx-anthropic-prompt-cache', max_tokens: 1024, messages: [{ role: 'user', content: 'x' }], stream: true })
      .withResponse();
    for await (const _ of stream) void _;
    const row = await ledgerRow(response.headers.get('x-request-id'));
    // (11 × 3 + 2304 × 3.75 + 4096 × 0.3 + 176 × 15) × 0.5 = 6,270.9 -> 6,271
    expect(row.quota).toBe(6_271);
  });
});
