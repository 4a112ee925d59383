import type { Pool } from 'pg';
import type { ConfigStore } from '../../gateway-config/store';
import type { ChannelConfig } from '../../gateway-config/schema';
import {
  type AdapterRegistry,
  type ChatChunk,
  type ChatRequest,
  type ChatStreamEvent,
  type EmbeddingsRequest,
  type ImageEditRequest,
  type ImagesRequest,
  type UpstreamAdapter,
  type UpstreamCall,
} from '../../upstream/adapter';
import { usageFromOpenAi } from '../../upstream/usage';
import { plainUsage, type TokenUsage } from '../pricing/usage';
import { createUpstreamAdapters } from '../../upstream/registry';
import type { RelayMetrics } from './metered-call';
import { BillingService } from '../billing/billing-service';
import type { LeaseOptions } from '../billing/credit-leases';
import { ValidationError } from '../errors';
import { costOfUnits, costOfUsage, estimateCost } from '../pricing/cost';
import { ChannelCooldown, type CooldownOptions } from './cooldown';
import { DEFAULT_MAX_ATTEMPTS } from './failover';
import { type CallCharge, createMeteredRelay, type StreamDriver, type StreamOutcome } from './metered-call';
import {
  completionCap,
  DEFAULT_COMPLETION_CAP,
  estimateCompletionTokens,
  estimateEmbeddingTokens,
  estimatePromptTokens,
  estimateTokens,
} from './metering';
import { type ModelRoute, resolveModel } from './resolve';
import { upstreamCallFor } from './endpoint';

export type { StreamOutcome } from './metered-call';
export type { RelayCaller, RelayLog, StreamSink } from './caller';
import type { RelayCaller, StreamSink } from './caller';

export interface RelayOptions {
  db: Pool;
  /** Group commit of holds and settles; share one per process between the relays (default: a new one on `db`). */
  billing?: BillingService;
  /** Credit leases of the default billing (ignored with `billing`); false: every call takes its own hold. */
  leases?: LeaseOptions | false;
  config: ConfigStore;
  /** By channel type; the composition root passes its own (src/upstream/registry.ts), the default is a fresh set. */
  adapters?: AdapterRegistry;
  cooldown?: ChannelCooldown | CooldownOptions;
  /** Attempts per call, across channels (default 3, never more than the candidates). */
  maxAttempts?: number;
  /** Completion tokens held when a chat request gives no max_tokens (default 4096). */
  defaultCompletionCap?: number;
  /** Hold lifetime for streams, which may run long (default 2 h; the sweeper returns a hold a crash left). */
  streamHoldTtlSeconds?: number;
  random?: () => number;
  /** Upstream attempts and billed credits, for /metrics. */
  metrics?: RelayMetrics;
}

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
  readonly billing: BillingService;
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
  const adapters: AdapterRegistry = opts.adapters ?? createUpstreamAdapters().chat;
  const cooldown = opts.cooldown instanceof ChannelCooldown ? opts.cooldown : new ChannelCooldown(opts.cooldown);
  const defaultCap = opts.defaultCompletionCap ?? DEFAULT_COMPLETION_CAP;
  const streamTtl = opts.streamHoldTtlSeconds ?? 2 * 3600;
  const billing = opts.billing ?? new BillingService(opts.db, { leases: opts.leases });
  const metered = createMeteredRelay({
    billing,
    cooldown,
    maxAttempts: opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    random: opts.random ?? Math.random,
    metrics: opts.metrics,
  });

  /** Channels of the route whose adapter implements `method`, in try order. */
  function candidates(route: ModelRoute, method: Method): ChannelConfig[] {
    return metered.candidates(route, (c) => typeof adapters[c.type]?.[method] === 'function', ENDPOINTS[method]);
  }

  const upstreamCall = upstreamCallFor;

  function adapterOf(channel: ChannelConfig): UpstreamAdapter {
    return adapters[channel.type] as UpstreamAdapter;
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

  /** A non-streamed endpoint: hold `amount`, call with failover, settle `charge(result)` (or release). */
  function unary<T>(
    caller: RelayCaller,
    route: ModelRoute,
    method: Exclude<Method, 'chatStream'>,
    amount: number,
    run: (adapter: UpstreamAdapter, call: UpstreamCall) => Promise<T>,
    charge: (result: T) => CallCharge,
  ): Promise<T> {
    const chs = candidates(route, method);
    return metered.unary(
      caller,
      route,
      chs,
      { amount, reason: method, ttlSeconds: metered.unaryTtl(chs) },
      (ch) => run(adapterOf(ch), upstreamCall(ch, route.model, caller)),
      charge,
    );
  }

  function tokensCharge(route: ModelRoute, usage: TokenUsage): CallCharge {
    return { quota: costOfUsage(route.price, usage, route.multiplier), usage };
  }

  return {
    cooldown,
    billing,

    async chat(req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      checkReasoning(route, req);
      const prompt = estimatePromptTokens(req);
      const amount = estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: completionCap(req, defaultCap) }, route.multiplier);
      const result = await unary(caller, route, 'chat', amount, (a, call) => a.chat(req, call), (r) =>
        tokensCharge(route, r.usage ?? plainUsage(prompt, estimateCompletionTokens(r.body.choices))),
      );
      return result.body;
    },

    async embeddings(req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const prompt = estimateEmbeddingTokens(req.input);
      const amount = estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: 0 }, route.multiplier);
      const result = await unary(caller, route, 'embeddings', amount, (a, call) => a.embeddings!(req, call), (r) =>
        tokensCharge(route, plainUsage(r.promptTokens ?? prompt, 0)),
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

    chatStream(req, caller, sink) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      checkReasoning(route, req);
      const chs = candidates(route, 'chatStream');
      const prompt = estimatePromptTokens(req);
      const amount = estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: completionCap(req, defaultCap) }, route.multiplier);
      const wantUsage = req.stream_options?.include_usage === true;
      let usage: TokenUsage | null = null;
      let completionLocal = 0;
      const driver: StreamDriver<ChatStreamEvent> = {
        start: () => sink.start(),
        forward(ev) {
          const chunk = ev.chunk;
          let payload: string | null;
          if ('usage' in chunk) {
            const u = ev.usage ?? (chunk.usage != null ? usageFromOpenAi(chunk.usage) : null);
            if (u) usage = u;
            if (wantUsage) payload = ev.raw ?? JSON.stringify(chunk);
            else if (chunk.choices.length === 0) payload = null;
            else payload = JSON.stringify(withoutUsage(chunk));
          } else {
            payload = ev.raw ?? JSON.stringify(chunk);
          }
          if (usage === null) completionLocal += deltaTokens(chunk);
          return payload === null ? true : sink.send(payload);
        },
        charge: () => tokensCharge(route, usage ?? plainUsage(prompt, completionLocal)),
        complete: () => sink.send('[DONE]'),
        fail: (kind) =>
          sink.send(
            JSON.stringify(
              kind === 'upstream'
                ? streamError('The upstream stream failed before it was complete; the call was not billed', 'upstream_error')
                : streamError('The call could not be billed', 'internal_error'),
            ),
          ),
        end: () => sink.end(),
      };
      return metered.stream(
        caller,
        route,
        chs,
        { amount, reason: 'chat_stream', ttlSeconds: streamTtl },
        (ch) => adapterOf(ch).chatStream(req, upstreamCall(ch, route.model, caller)),
        driver,
      );
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
