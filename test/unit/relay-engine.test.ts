import type { BillingService, CallHold, Charge } from '../../src/domain/billing/billing-service';
import type { UpstreamAdapters } from '../../src/domain/ports/adapters';
import type { MessagesAdapter } from '../../src/domain/ports/messages';
import type { ChatChunk, ChatStream, ChatStreamEvent, UpstreamAdapter } from '../../src/domain/ports/upstream';
import { UpstreamError } from '../../src/domain/ports/upstream-error';
import type { RelayCaller, StreamSink } from '../../src/domain/relay/caller';
import { createRelayEngine, MID_STREAM_ERRORS, type RelayEngine } from '../../src/domain/relay/engine';
import { chatEndpoint, chatStreamEndpoint } from '../../src/domain/relay/endpoints/chat';
import { embeddingsEndpoint } from '../../src/domain/relay/endpoints/embeddings';
import { messagesCall, messagesCountEndpoint } from '../../src/domain/relay/endpoints/messages';
import { EndpointNotSupportedError, UpstreamRejectedError, UpstreamUnavailableError } from '../../src/domain/relay/errors';
import { ResponseIds } from '../../src/domain/relay/response-ids';
import { ConfigStore } from '../../src/gateway-config/store';
import { validateGatewayConfig } from '../../src/gateway-config/schema';
import type { ChannelConfig } from '../../src/gateway-config/schema';
import type { ApiKeyPrincipal } from '../../src/domain/keys/key-auth';
import { plainUsage } from '../../src/domain/pricing/usage';

/**
 * The relay engine alone: fake adapters stand in for the upstreams and a recording billing for PostgreSQL, so
 * failover, metering, streaming and a client that goes away are checked without a database or a server.
 */

const GPT = 'gpt-test';
const CLAUDE = 'claude-test';

function config() {
  const r = validateGatewayConfig(
    {
      channels: [
        { name: 'first', type: 'openai', base_url: 'http://first.invalid/v1', key: 'k1', models: [GPT], priority: 10 },
        { name: 'second', type: 'openai', base_url: 'http://second.invalid/v1', key: 'k2', models: [GPT], priority: 5 },
        { name: 'claude', type: 'anthropic', base_url: 'http://claude.invalid/v1', key: 'k3', models: [CLAUDE] },
      ],
      // USD per 1M tokens (500,000 credits = 1 USD).
      models: { [GPT]: { input_per_1m: 2, output_per_1m: 4 }, [CLAUDE]: { input_per_1m: 3, output_per_1m: 15 } },
    },
    'unit',
  );
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return ConfigStore.fixed(r.config);
}

/** What billing was asked to do, in order. */
type BillingEvent = { op: 'hold'; amount: number; reason: string } | { op: 'settle'; quota: number; charge: Charge } | { op: 'release' };

function recordingBilling(): { billing: BillingService; events: BillingEvent[] } {
  const events: BillingEvent[] = [];
  const billing = {
    async hold(h: { amount: number; reason: string }): Promise<CallHold> {
      events.push({ op: 'hold', amount: h.amount, reason: h.reason });
      return { kind: 'hold', businessKey: 'req:x', amount: h.amount };
    },
    async bill(_hold: CallHold, c: Charge) {
      events.push({ op: 'settle', quota: c.quota, charge: c });
      return { outcome: Promise.resolve({ status: 'settled', billed: c.quota, shortfall: 0 }) };
    },
    async release() {
      events.push({ op: 'release' });
    },
  };
  return { billing: billing as unknown as BillingService, events };
}

const KEY: ApiKeyPrincipal = {
  tokenId: 1,
  accountId: 1,
  name: 'k',
  group: '',
  models: [],
  unlimitedQuota: false,
  expiredTime: -1,
  rpmLimit: 0,
  tpmLimit: 0,
  maxConcurrency: 0,
  periodQuota: 0,
} as unknown as ApiKeyPrincipal;

function caller(signal = new AbortController().signal): RelayCaller {
  return { key: KEY, requestId: 'req-1', signal, timing: {} };
}

const completion = (content: string) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion' as const,
  created: 1,
  model: GPT,
  choices: [{ index: 0, message: { role: 'assistant' as const, content }, finish_reason: 'stop' as const }],
});

const usage = plainUsage(10, 20);

/** A chat stream of the given chunks; `failAfter`: throws an UpstreamError after that many. */
function chatStream(chunks: ChatChunk[], opts: { failAfter?: number } = {}): ChatStream & { cancelled: boolean } {
  const s = {
    cancelled: false,
    cancel() {
      s.cancelled = true;
    },
    async *[Symbol.asyncIterator](): AsyncGenerator<ChatStreamEvent> {
      for (let i = 0; i < chunks.length; i++) {
        if (opts.failAfter !== undefined && i >= opts.failAfter) throw new UpstreamError('protocol', 'cut short');
        yield { chunk: chunks[i] };
      }
    },
  };
  return s;
}

const chunk = (content: string | null, extra: Partial<ChatChunk> = {}): ChatChunk =>
  ({ id: 'c', object: 'chat.completion.chunk', created: 1, model: GPT, choices: content === null ? [] : [{ index: 0, delta: { content }, finish_reason: null }], ...extra }) as ChatChunk;

function engineWith(chat: Record<string, Partial<UpstreamAdapter>>, messages: Record<string, Partial<MessagesAdapter>> = {}) {
  const { billing, events } = recordingBilling();
  const calls: string[] = [];
  const byChannel = (ch: ChannelConfig) => chat[ch.name];
  // One adapter per channel type that dispatches on the channel's name, so each channel can answer its own way.
  const dispatch: UpstreamAdapter = {
    chat: (req, call) => {
      calls.push(call.channel.name);
      return byChannel(call.channel).chat!(req, call);
    },
    chatStream: (req, call) => {
      calls.push(call.channel.name);
      return byChannel(call.channel).chatStream!(req, call);
    },
  };
  const adapters: UpstreamAdapters = {
    chat: { openai: dispatch },
    messages: messages.claude ? { anthropic: messages.claude as MessagesAdapter } : {},
    gemini: {},
    responses: () => undefined,
    video: () => null,
    audio: {},
    rerank: {},
  };
  const engine: RelayEngine = createRelayEngine({ config: config(), billing, adapters, responseIds: new ResponseIds('unit'), random: () => 0 });
  return { engine, events, calls };
}

function sink(opts: { goneAfter?: number } = {}): StreamSink & { sent: string[]; started: boolean; ended: boolean } {
  const s = {
    sent: [] as string[],
    started: false,
    ended: false,
    start() {
      s.started = true;
    },
    send(payload: string) {
      if (opts.goneAfter !== undefined && s.sent.length >= opts.goneAfter) return false;
      s.sent.push(payload);
      return true;
    },
    end() {
      s.ended = true;
    },
  };
  return s;
}

const ask = { model: GPT, messages: [{ role: 'user' as const, content: 'hello there' }], max_tokens: 100 };

describe('relay engine: plain calls', () => {
  it('fails over from a 503 to the next channel, holds the estimate first and bills the upstream usage once', async () => {
    const { engine, events, calls } = engineWith({
      first: { chat: async () => Promise.reject(new UpstreamError('status', 'the upstream answered 503', 503)) },
      second: { chat: async () => ({ body: completion('hi'), usage }) },
    });
    const body = await engine.unary(chatEndpoint, ask, caller());
    expect(body.choices[0].message.content).toBe('hi');
    expect(calls).toEqual(['first', 'second']);
    expect(events.map((e) => e.op)).toEqual(['hold', 'settle']);
    const [hold, settle] = events as [Extract<BillingEvent, { op: 'hold' }>, Extract<BillingEvent, { op: 'settle' }>];
    expect(hold.reason).toBe('chat');
    // 10 prompt tokens at 2 USD/1M + 20 completion at 4 USD/1M = 0.0001 USD = 50 credits.
    expect(settle.quota).toBe(50);
    expect(settle.charge.entry).toMatchObject({ requestId: 'req-1', model: GPT, channel: 'second', isStream: false, usage });
    // The hold covers the prompt counted locally plus max_tokens, so it is never below what was billed here.
    expect(hold.amount).toBeGreaterThanOrEqual(settle.quota);
  });

  it('passes a 4xx to the client without trying another channel, and releases the hold', async () => {
    const { engine, events, calls } = engineWith({
      first: { chat: async () => Promise.reject(new UpstreamError('status', 'bad request', 400, 'invalid_value', 'messages')) },
      second: { chat: async () => ({ body: completion('never'), usage }) },
    });
    const err = await engine.unary(chatEndpoint, ask, caller()).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamRejectedError);
    expect(err).toMatchObject({ status: 400, code: 'invalid_value' });
    expect(calls).toEqual(['first']);
    expect(events.map((e) => e.op)).toEqual(['hold', 'release']);
  });

  it('answers 502 when every channel failed, and bills nothing', async () => {
    const down = { chat: async () => Promise.reject(new UpstreamError('connect', 'refused')) };
    const { engine, events } = engineWith({ first: down, second: down });
    await expect(engine.unary(chatEndpoint, ask, caller())).rejects.toBeInstanceOf(UpstreamUnavailableError);
    expect(events.map((e) => e.op)).toEqual(['hold', 'release']);
  });

  it('meters locally when the upstream reports no usage', async () => {
    const { engine, events } = engineWith({ first: { chat: async () => ({ body: completion('four words of text'), usage: null }) } });
    await engine.unary(chatEndpoint, ask, caller());
    const settle = events.find((e) => e.op === 'settle') as Extract<BillingEvent, { op: 'settle' }>;
    expect(settle.charge.entry.usage?.input).toBeGreaterThan(0);
    expect(settle.charge.entry.usage?.output).toBeGreaterThan(0);
  });

  it('refuses an endpoint no channel of the model can serve, before holding anything', async () => {
    const { engine, events } = engineWith({ first: {}, second: {} });
    await expect(engine.unary(embeddingsEndpoint, { model: CLAUDE, input: 'x' }, caller())).rejects.toBeInstanceOf(EndpointNotSupportedError);
    expect(events).toEqual([]);
  });
});

describe('relay engine: streams', () => {
  const chunks = [chunk('Hel'), chunk('lo'), chunk(null, { usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 } })];

  it('forwards every chunk, bills the usage of the last chunk, and sends [DONE] only after the settle', async () => {
    const { engine, events } = engineWith({ first: { chatStream: async () => chatStream(chunks) } });
    const s = sink();
    const outcome = await engine.stream(chatStreamEndpoint, { ...ask, stream: true, stream_options: { include_usage: true } }, caller(), s);
    expect(outcome).toEqual({ status: 'completed', channel: 'first', quota: 50 });
    expect(s.sent.map((p) => (p === '[DONE]' ? p : JSON.parse(p).choices.length))).toEqual([1, 1, 0, '[DONE]']);
    expect(events.map((e) => e.op)).toEqual(['hold', 'settle']);
    expect(s.started && s.ended).toBe(true);
  });

  it('keeps the usage chunk from a client that did not ask for it, and still bills it', async () => {
    const { engine, events } = engineWith({ first: { chatStream: async () => chatStream(chunks) } });
    const s = sink();
    await engine.stream(chatStreamEndpoint, { ...ask, stream: true }, caller(), s);
    expect(s.sent).toHaveLength(3);
    expect(s.sent.some((p) => p.includes('"usage"'))).toBe(false);
    expect((events[1] as Extract<BillingEvent, { op: 'settle' }>).quota).toBe(50);
  });

  it('fails over before the first chunk, never after it', async () => {
    const { engine, calls } = engineWith({
      first: { chatStream: async () => chatStream(chunks, { failAfter: 0 }) },
      second: { chatStream: async () => chatStream(chunks) },
    });
    const outcome = await engine.stream(chatStreamEndpoint, { ...ask, stream: true }, caller(), sink());
    expect(outcome.status).toBe('completed');
    expect(calls).toEqual(['first', 'second']);
  });

  it('ends a stream the upstream cut short with an error event in its format, and bills nothing', async () => {
    const { engine, events } = engineWith({ first: { chatStream: async () => chatStream(chunks, { failAfter: 1 }) } });
    const s = sink();
    const outcome = await engine.stream(chatStreamEndpoint, { ...ask, stream: true }, caller(), s);
    expect(outcome).toEqual({ status: 'upstream_failed', channel: 'first' });
    expect(JSON.parse(s.sent.at(-1)!)).toEqual({ error: { message: MID_STREAM_ERRORS.upstream.message, type: 'server_error', param: null, code: 'upstream_error' } });
    expect(events.map((e) => e.op)).toEqual(['hold', 'release']);
  });

  it('stops reading the upstream and bills nothing when the client goes away mid-stream', async () => {
    const upstream = chatStream(chunks);
    const { engine, events } = engineWith({ first: { chatStream: async () => upstream } });
    const outcome = await engine.stream(chatStreamEndpoint, { ...ask, stream: true }, caller(), sink({ goneAfter: 1 }));
    expect(outcome).toEqual({ status: 'client_gone', channel: 'first' });
    expect(upstream.cancelled).toBe(true);
    expect(events.map((e) => e.op)).toEqual(['hold', 'release']);
  });
});

describe('relay engine: token counts', () => {
  const count = (countTokens: MessagesAdapter['countTokens']) =>
    engineWith({}, { claude: { messages: async () => Promise.reject(new Error('unused')), messagesStream: async () => Promise.reject(new Error('unused')), countTokens } }).engine;
  const req = messagesCall({ model: CLAUDE, messages: [{ role: 'user' as const, content: 'count me' }] }, { version: '2023-06-01' });

  it("answers the upstream's own count, and is never held or billed", async () => {
    const { engine, events } = engineWith({}, { claude: { countTokens: async () => ({ input_tokens: 42 }) } });
    expect(await engine.count(messagesCountEndpoint, req, caller())).toEqual({ input_tokens: 42 });
    expect(events).toEqual([]);
  });

  it('passes an upstream 4xx to the client as a rejection it can read, not a raw upstream error', async () => {
    const engine = count(async () => Promise.reject(new UpstreamError('status', 'messages: field required', 400, 'invalid_request_error', 'messages')));
    const err = await engine.count(messagesCountEndpoint, req, caller()).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamRejectedError);
    expect(err).toMatchObject({ status: 400, message: 'messages: field required' });
  });

  it('counts locally when the upstream has no count endpoint (404) or is down', async () => {
    for (const failure of [new UpstreamError('status', 'not found', 404), new UpstreamError('connect', 'refused')]) {
      const engine = count(async () => Promise.reject(failure));
      const r = await engine.count(messagesCountEndpoint, req, caller());
      expect(r.input_tokens).toBeGreaterThan(0);
    }
  });
});
