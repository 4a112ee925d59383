import type { Pool } from 'pg';
import type { ConfigStore } from '../../gateway-config/store';
import { upstreamModel } from '../../gateway-config/lookup';
import type { ChannelConfig } from '../../gateway-config/schema';
import {
  type AdapterRegistry,
  type ChatChunk,
  type ChatRequest,
  type ChatStream,
  type ChatStreamEvent,
  type EmbeddingsRequest,
  type ImageEditRequest,
  type ImagesRequest,
  type TokenCounts,
  type UpstreamAdapter,
  type UpstreamCall,
  tokenCountsOf,
} from '../../upstream/adapter';
import { UpstreamError } from '../../upstream/errors';
import { createOpenAiAdapter } from '../../upstream/openai-adapter';
import { createAnthropicAdapter } from '../../upstream/anthropic-adapter';
import type { ApiKeyPrincipal } from '../keys/key-auth';
import { ValidationError } from '../errors';
import { costOfTokens, costOfUnits, estimateCost } from '../pricing/cost';
import { ChannelCooldown, type CooldownOptions } from './cooldown';
import { ClientGoneError, EndpointNotSupportedError } from './errors';
import { DEFAULT_MAX_ATTEMPTS, withFailover } from './failover';
import {
  billable,
  type CallHold,
  completionCap,
  DEFAULT_COMPLETION_CAP,
  estimateCompletionTokens,
  estimateEmbeddingTokens,
  estimatePromptTokens,
  estimateTokens,
  openHold,
  releaseHold,
  settleHold,
} from './metering';
import { type ModelRoute, resolveModel } from './resolve';
import { orderCandidates } from './router';

/** Pino-compatible; only channel names, kinds and amounts are logged (never hosts, keys or bodies). */
export interface RelayLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface RelayOptions {
  db: Pool;
  config: ConfigStore;
  /** By channel type; defaults to { openai }. H's anthropic adapter is added here. */
  adapters?: AdapterRegistry;
  cooldown?: ChannelCooldown | CooldownOptions;
  /** Attempts per call, across channels (default 3, never more than the candidates). */
  maxAttempts?: number;
  /** Completion tokens held when a chat request gives no max_tokens (default 4096). */
  defaultCompletionCap?: number;
  /** Hold lifetime for streams, which may run long (default 2 h; the sweeper returns a hold a crash left). */
  streamHoldTtlSeconds?: number;
  random?: () => number;
}

/** Who calls, and how to reach them. */
export interface RelayCaller {
  key: ApiKeyPrincipal;
  /** The call's x-request-id: ledger request_id and hold business key `req:<id>`. */
  requestId: string;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
  log?: RelayLog;
}

/** Where a stream goes: the transport (SSE over HTTP) behind a plain interface. */
export interface StreamSink {
  /** Once, when the first chunk is in hand: send the status line and headers now. */
  start(): void;
  /** One `data:` payload (a chunk's JSON, or `[DONE]`); false (or a promise of false) when the client is gone. */
  send(payload: string): boolean | Promise<boolean>;
  /** Ends the response. */
  end(): void;
}

export type StreamOutcome =
  | { status: 'completed'; channel: string; quota: number }
  /** The upstream failed after the first byte reached the client: an error event was sent; not billed. */
  | { status: 'upstream_failed'; channel: string }
  /** The client went away mid-stream (write_response_body_failed): upstream aborted, not billed. */
  | { status: 'client_gone'; channel: string }
  /** Settling failed: the hold stays for the sweeper (not billed); an error event was sent. */
  | { status: 'billing_failed'; channel: string };

export interface Relay {
  chat(req: ChatRequest, caller: RelayCaller): Promise<Record<string, unknown>>;
  /**
   * A streamed chat. Throws (like `chat`) when it fails before the first chunk: nothing was written and the
   * caller answers with an error. Once `sink.start()` was called it never throws: the outcome says how it ended.
   */
  chatStream(req: ChatRequest, caller: RelayCaller, sink: StreamSink): Promise<StreamOutcome>;
  embeddings(req: EmbeddingsRequest, caller: RelayCaller): Promise<Record<string, unknown>>;
  imagesGenerate(req: ImagesRequest, caller: RelayCaller): Promise<Record<string, unknown>>;
  imagesEdit(req: ImageEditRequest, caller: RelayCaller): Promise<Record<string, unknown>>;
  readonly cooldown: ChannelCooldown;
}

type Method = 'chat' | 'chatStream' | 'embeddings' | 'imagesGenerate' | 'imagesEdit';
const ENDPOINTS: Record<Method, string> = {
  chat: 'chat completions',
  chatStream: 'chat completions',
  embeddings: 'embeddings',
  imagesGenerate: 'image generation',
  imagesEdit: 'image edits',
};

/** Parameters and roles reasoning-series models refuse. */
const REASONING_REFUSED = ['temperature', 'top_p', 'frequency_penalty'] as const;

export function createRelay(opts: RelayOptions): Relay {
  const adapters: AdapterRegistry = opts.adapters ?? { openai: createOpenAiAdapter(), anthropic: createAnthropicAdapter() };
  const cooldown = opts.cooldown instanceof ChannelCooldown ? opts.cooldown : new ChannelCooldown(opts.cooldown);
  const maxAttempts = opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const defaultCap = opts.defaultCompletionCap ?? DEFAULT_COMPLETION_CAP;
  const streamTtl = opts.streamHoldTtlSeconds ?? 2 * 3600;
  const random = opts.random ?? Math.random;
  const { db } = opts;

  /** Channels of the route whose adapter implements `method`, in try order. */
  function candidates(route: ModelRoute, method: Method): ChannelConfig[] {
    const able = route.channels.filter((c) => typeof adapters[c.type]?.[method] === 'function');
    if (able.length === 0) throw new EndpointNotSupportedError(route.model, ENDPOINTS[method]);
    return orderCandidates(able, cooldown, random);
  }

  function holdTtl(chs: readonly ChannelConfig[]): number {
    const longest = chs.reduce((m, c) => Math.max(m, c.timeout_ms), 0);
    return Math.ceil((longest * Math.min(maxAttempts, chs.length)) / 1000) + 60;
  }

  function upstreamCall(channel: ChannelConfig, model: string, caller: RelayCaller): UpstreamCall {
    return { channel, upstreamModel: upstreamModel(channel, model), signal: caller.signal, requestId: caller.requestId };
  }

  function adapterOf(channel: ChannelConfig): UpstreamAdapter {
    return adapters[channel.type] as UpstreamAdapter;
  }

  function failoverOpts(caller: RelayCaller) {
    return {
      maxAttempts,
      signal: caller.signal,
      onAttemptFailed: (channel: ChannelConfig, err: UpstreamError) =>
        caller.log?.warn({ channel: channel.name, kind: err.kind, status: err.status ?? undefined }, 'upstream attempt failed'),
    };
  }

  function checkReasoning(route: ModelRoute, req: ChatRequest): void {
    if (!route.price.reasoning) return;
    for (const p of REASONING_REFUSED) {
      if (req[p] !== undefined && req[p] !== null) {
        throw new ValidationError(`${p}: is not supported by the reasoning model '${route.model}'`, p);
      }
    }
    req.messages.forEach((m, i) => {
      if (m.role === 'system') {
        throw new ValidationError(`messages[${i}].role: the 'system' role is not supported by the reasoning model '${route.model}'`, `messages[${i}].role`);
      }
    });
  }

  /** The hold → call with failover → settle (or release) pattern of every non-streamed endpoint. */
  async function unary<T>(
    caller: RelayCaller,
    route: ModelRoute,
    method: Exclude<Method, 'chatStream'>,
    amount: number,
    run: (adapter: UpstreamAdapter, call: UpstreamCall) => Promise<T>,
    charge: (result: T) => { quota: number; promptTokens?: number; completionTokens?: number; units?: number },
  ): Promise<T> {
    const started = Date.now();
    const chs = candidates(route, method);
    const hold = await openHold(db, {
      requestId: caller.requestId,
      tokenId: caller.key.tokenId,
      accountId: caller.key.accountId,
      amount,
      reason: method,
      ttlSeconds: holdTtl(chs),
    });
    try {
      const { result, channel } = await withFailover(chs, cooldown, (ch) => run(adapterOf(ch), upstreamCall(ch, route.model, caller)), failoverOpts(caller));
      if (caller.signal.aborted) throw new ClientGoneError();
      const c = charge(result);
      await settleOrLog(hold, caller, route, channel, false, c, started);
      return result;
    } catch (err) {
      await releaseHold(db, hold, (e) => caller.log?.error({ err: e }, 'releasing a hold failed; the sweeper will'));
      throw clientGone(err, caller);
    }
  }

  async function settleOrLog(
    hold: CallHold,
    caller: RelayCaller,
    route: ModelRoute,
    channel: ChannelConfig,
    isStream: boolean,
    c: { quota: number; promptTokens?: number; completionTokens?: number; units?: number },
    started: number,
  ): Promise<number> {
    const { quota, capped } = billable(c.quota, hold);
    if (capped) caller.log?.warn({ cost: c.quota, held: hold.amount, model: route.model }, 'answer cost more than its hold; billed the hold');
    await settleHold(db, hold, {
      requestId: caller.requestId,
      model: route.model,
      tokenName: caller.key.name,
      channel: channel.name,
      isStream,
      quota,
      promptTokens: c.promptTokens,
      completionTokens: c.completionTokens,
      units: c.units,
      latencyMs: Date.now() - started,
    });
    return quota;
  }

  function tokensCharge(route: ModelRoute, t: TokenCounts) {
    return { quota: costOfTokens(route.price, t, route.multiplier), promptTokens: t.promptTokens, completionTokens: t.completionTokens };
  }

  return {
    cooldown,

    async chat(req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      checkReasoning(route, req);
      const prompt = estimatePromptTokens(req);
      const amount = estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: completionCap(req, defaultCap) }, route.multiplier);
      const result = await unary(caller, route, 'chat', amount, (a, call) => a.chat(req, call), (r) =>
        tokensCharge(route, r.usage ?? { promptTokens: prompt, completionTokens: estimateCompletionTokens(r.body.choices) }),
      );
      return result.body;
    },

    async embeddings(req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const prompt = estimateEmbeddingTokens(req.input);
      const amount = estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: 0 }, route.multiplier);
      const result = await unary(caller, route, 'embeddings', amount, (a, call) => a.embeddings!(req, call), (r) =>
        tokensCharge(route, { promptTokens: r.promptTokens ?? prompt, completionTokens: 0 }),
      );
      return result.body;
    },

    async imagesGenerate(req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const amount = estimateCost(route.price, { units: req.n ?? 1 }, route.multiplier);
      const result = await unary(caller, route, 'imagesGenerate', amount, (a, call) => a.imagesGenerate!(req, call), (r) => ({
        quota: costOfUnits(route.price, r.body.data.length, route.multiplier),
        units: r.body.data.length,
      }));
      return result.body;
    },

    async imagesEdit(req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const amount = estimateCost(route.price, { units: req.n ?? 1 }, route.multiplier);
      const result = await unary(caller, route, 'imagesEdit', amount, (a, call) => a.imagesEdit!(req, call), (r) => ({
        quota: costOfUnits(route.price, r.body.data.length, route.multiplier),
        units: r.body.data.length,
      }));
      return result.body;
    },

    async chatStream(req, caller, sink) {
      const startedAt = Date.now();
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      checkReasoning(route, req);
      const chs = candidates(route, 'chatStream');
      const prompt = estimatePromptTokens(req);
      const amount = estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: completionCap(req, defaultCap) }, route.multiplier);
      const hold = await openHold(db, {
        requestId: caller.requestId,
        tokenId: caller.key.tokenId,
        accountId: caller.key.accountId,
        amount,
        reason: 'chat_stream',
        ttlSeconds: streamTtl,
      });
      const release = () => releaseHold(db, hold, (e) => caller.log?.error({ err: e }, 'releasing a hold failed; the sweeper will'));

      // Failover until a channel produced its first chunk; nothing has been written to the client before that.
      let opened: { stream: ChatStream; it: AsyncIterator<ChatStreamEvent>; first: ChatStreamEvent };
      let channel: ChannelConfig;
      try {
        ({ result: opened, channel } = await withFailover(
          chs,
          cooldown,
          async (ch) => {
            const stream = await adapterOf(ch).chatStream(req, upstreamCall(ch, route.model, caller));
            const it = stream[Symbol.asyncIterator]();
            try {
              const first = await it.next();
              if (first.done) throw new UpstreamError('protocol', 'the upstream stream ended before its first chunk');
              return { stream, it, first: first.value };
            } catch (err) {
              stream.cancel();
              throw err;
            }
          },
          failoverOpts(caller),
        ));
      } catch (err) {
        await release();
        throw clientGone(err, caller);
      }

      // First byte: from here on, no failover and no exception to the caller.
      sink.start();
      const wantUsage = req.stream_options?.include_usage === true;
      let usage: TokenCounts | null = null;
      let completionLocal = 0;
      try {
        let ev = opened.first;
        for (;;) {
          const chunk = ev.chunk;
          let payload: string | null;
          if ('usage' in chunk) {
            const u = chunk.usage != null ? tokenCountsOf(chunk.usage) : null;
            if (u) usage = u;
            if (wantUsage) payload = ev.raw ?? JSON.stringify(chunk);
            else if (chunk.choices.length === 0) payload = null;
            else payload = JSON.stringify(withoutUsage(chunk));
          } else {
            payload = ev.raw ?? JSON.stringify(chunk);
          }
          if (usage === null) completionLocal += deltaTokens(chunk);
          if (payload !== null) {
            const sent = sink.send(payload);
            if (!(typeof sent === 'boolean' ? sent : await sent) || caller.signal.aborted) throw new ClientGoneError();
          }
          const next = await opened.it.next();
          if (next.done) break;
          ev = next.value;
        }
      } catch (err) {
        opened.stream.cancel();
        await release();
        if (err instanceof ClientGoneError || caller.signal.aborted) {
          caller.log?.warn({ channel: channel.name, code: 'write_response_body_failed' }, 'client went away mid-stream; not billed');
          sink.end();
          return { status: 'client_gone', channel: channel.name };
        }
        caller.log?.warn({ channel: channel.name, kind: err instanceof UpstreamError ? err.kind : 'error' }, 'upstream failed mid-stream; not billed');
        if (!(err instanceof UpstreamError)) caller.log?.error({ err }, 'stream relay failed');
        cooldown.recordFailure(channel.name);
        await sink.send(JSON.stringify(streamError('The upstream stream failed before it was complete; the call was not billed', 'upstream_error')));
        sink.end();
        return { status: 'upstream_failed', channel: channel.name };
      }

      try {
        const quota = await settleOrLog(hold, caller, route, channel, true, tokensCharge(route, usage ?? { promptTokens: prompt, completionTokens: completionLocal }), startedAt);
        await sink.send('[DONE]');
        sink.end();
        return { status: 'completed', channel: channel.name, quota };
      } catch (err) {
        caller.log?.error({ err }, 'settling a stream failed; the hold stays for the sweeper');
        await sink.send(JSON.stringify(streamError('The call could not be billed', 'internal_error')));
        sink.end();
        return { status: 'billing_failed', channel: channel.name };
      }
    },
  };
}

function withoutUsage(chunk: ChatChunk): Record<string, unknown> {
  const { usage: _usage, ...rest } = chunk;
  return rest;
}

/** Local count of a chunk's content and tool-call arguments (used only when the upstream reports no usage). */
function deltaTokens(chunk: ChatChunk): number {
  let n = 0;
  for (const choice of chunk.choices) {
    const delta = choice.delta as { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> } | undefined;
    if (!delta) continue;
    if (typeof delta.content === 'string') n += estimateTokens(delta.content);
    if (Array.isArray(delta.tool_calls)) {
      for (const t of delta.tool_calls) if (typeof t?.function?.arguments === 'string') n += estimateTokens(t.function.arguments);
    }
  }
  return n;
}

/** An error event in a stream that already started (the OpenAI SDK raises it as an APIError). */
export function streamError(message: string, code: string) {
  return { error: { message, type: 'server_error', param: null, code } };
}

/** An abort caused by the client is reported as ClientGoneError; anything else unchanged. */
function clientGone(err: unknown, caller: RelayCaller): unknown {
  if (err instanceof UpstreamError && err.kind === 'aborted') return new ClientGoneError();
  if (caller.signal.aborted && err instanceof UpstreamError) return new ClientGoneError();
  return err;
}
