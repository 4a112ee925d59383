import type { ChannelConfig, ModelPrice } from '../../gateway-config/schema';
import type { ConfigStore } from '../../gateway-config/store';
import type { BillingService } from '../billing/billing-service';
import type { UpstreamAdapters } from '../ports/adapters';
import type { UpstreamCall } from '../ports/upstream';
import { UpstreamError } from '../ports/upstream-error';
import { costOfQuantity, costOfUnits, costOfUsage, estimateCost, type QuantityUnit, type UsageEstimate } from '../pricing/cost';
import { plainUsage, type TokenUsage } from '../pricing/usage';
import type { RelayCaller } from './caller';
import { ChannelCooldown, type CooldownOptions } from './cooldown';
import { UpstreamRejectedError } from './errors';
import { DEFAULT_MAX_ATTEMPTS, toUnavailable } from './failover';
import { type CallCharge, createMeteredRelay, type EventStream, type MeteredRelay, type RelayMetrics, type StreamDriver, type StreamOutcome } from './metered-call';
import { DEFAULT_COMPLETION_CAP } from './metering';
import { type ModelRoute, resolveModel } from './resolve';
import type { ResponseIds } from './response-ids';
import { upstreamModel } from '../../gateway-config/lookup';

/**
 * The relay engine: one per process, built by the composition root with one set of defaults. It resolves the model
 * for the key, holds the most a call can cost, tries the channels in the router's order with failover, and settles
 * the metered usage (or releases). What differs between endpoints (chat, embeddings, images, Messages, Responses,
 * the token counts) is declared by an endpoint spec (src/domain/relay/endpoints/): which adapter serves it on a
 * channel, the hold estimate, the call, what is metered, and the wire events of a stream.
 */

export interface RelayEngineOptions {
  config: ConfigStore;
  /** The process's billing: every endpoint shares its group commit and credit leases. */
  billing: BillingService;
  /** The adapters of every channel type (src/upstream/registry.ts, wired by the composition root). */
  adapters: UpstreamAdapters;
  /** Signs the ids of natively stored Responses; every replica needs the same (made from GATEWAY_SECRET). */
  responseIds: ResponseIds;
  cooldown?: ChannelCooldown | CooldownOptions;
  /** Attempts per call, across channels (default 3, never more than the candidates). */
  maxAttempts?: number;
  /** Completion tokens held when a request gives no limit of its own (default 4096). */
  defaultCompletionCap?: number;
  /** Hold lifetime for streams, which may run long (default 2 h; the sweeper returns a hold a crash left). */
  streamHoldTtlSeconds?: number;
  random?: () => number;
  /** Upstream attempts and billed credits, for /metrics. */
  metrics?: RelayMetrics;
}

/** What an endpoint spec may read of the engine. */
export interface EngineContext {
  adapters: UpstreamAdapters;
  responseIds: ResponseIds;
  defaultCompletionCap: number;
}

/** The hold of a call: the prompt as counted locally (the fallback when the upstream reports no usage) and its credits. */
export interface HoldEstimate {
  prompt: number;
  amount: number;
}

/**
 * What a call used, as the engine prices it: tokens by dimension, units (images: `unit` names them in the ledger),
 * or a quantity of the model's quantity price (characters, milliseconds of audio, search units).
 */
export type Metered = { usage: TokenUsage } | { units: number; unit: string } | { quantity: number; unit: QuantityUnit };

/** The channels a call may try and the request each gets (the default: every able channel, the request as sent). */
export interface CallPlan<Req> {
  channels: ChannelConfig[];
  req: Req;
}

/** What every endpoint declares. */
export interface EndpointSpec<Req extends { model: string }, A> {
  /** Named in the 400 when no channel of the model can serve it ("does not support <name>"). */
  name: string;
  /** The hold's reason in the ledger of holds. */
  reason: string;
  /** The price of a model the config gives none (moderations: free); without it such a model is refused (400). */
  unpriced?: ModelPrice;
  /** The adapter serving this endpoint on a channel, or undefined where its type cannot. */
  adapterOf(adapters: UpstreamAdapters, channel: ChannelConfig): A | undefined;
  /** Checks the request against its model before anything is held (a 400). */
  check?(req: Req, route: ModelRoute): void;
  /** Narrows the channels (given able and in the router's order) or rewrites the request (a stored Response lives on one channel). */
  plan?(req: Req, caller: RelayCaller, route: ModelRoute, ordered: ChannelConfig[], ctx: EngineContext): CallPlan<Req>;
  /** The most the call can cost: the prompt counted locally and the most it may produce (tokens), or its units. */
  hold(req: Req, route: ModelRoute, ctx: EngineContext): UsageEstimate;
}

export interface UnaryEndpoint<Req extends { model: string }, A, R, B = Record<string, unknown>> extends EndpointSpec<Req, A> {
  call(adapter: A, req: Req, call: UpstreamCall, channel: ChannelConfig, caller: RelayCaller, ctx: EngineContext): Promise<R>;
  /** What the answer used: the upstream's usage, or a local count from the hold's prompt and the answer. */
  metered(result: R, estimate: HoldEstimate, call: { req: Req; route: ModelRoute }): Metered;
  /** The body the client gets. */
  body(result: R): B;
}

/** A stream's client side in its wire format, made once the first event is in hand. */
export interface StreamWire<E> {
  /** One event to the client; false (or a promise of false) when the client is gone. */
  forward(ev: E): boolean | Promise<boolean>;
  /** What the stream used, once it ended. */
  metered(): Metered;
  /** After the settle: the closing event(s) held back until the call was billed. */
  complete(): unknown;
  /** An error event in the stream's format (MID_STREAM_ERRORS says what). */
  error(code: 'upstream_error' | 'internal_error', message: string): unknown;
}

export interface StreamSinkBase {
  start(): void;
  end(): void;
}

export interface StreamEndpoint<Req extends { model: string }, A, E, S extends StreamSinkBase> extends EndpointSpec<Req, A> {
  open(adapter: A, req: Req, call: UpstreamCall): Promise<EventStream<E>>;
  wire(o: { req: Req; route: ModelRoute; estimate: HoldEstimate; caller: RelayCaller; sink: S; stream: EventStream<E>; channel: ChannelConfig; ctx: EngineContext }): StreamWire<E>;
}

/** A token count: never held or billed; the first channel's native count, else a local one. */
export interface CountEndpoint<Req extends { model: string }, A, R> {
  name: string;
  adapterOf(adapters: UpstreamAdapters, channel: ChannelConfig): A | undefined;
  plan?(req: Req, caller: RelayCaller, route: ModelRoute, ordered: ChannelConfig[], ctx: EngineContext): CallPlan<Req>;
  /** The upstream's own count, where the adapter has one. */
  native?(adapter: A, req: Req, call: UpstreamCall): Promise<R> | undefined;
  local(req: Req): R;
}

/** What a client is told when a stream fails after its first byte: in every wire format, the same words. */
export const MID_STREAM_ERRORS = {
  upstream: { code: 'upstream_error', message: 'The upstream stream failed before it was complete; the call was not billed' },
  billing: { code: 'internal_error', message: 'The call could not be billed' },
} as const;

export interface RelayEngine {
  readonly cooldown: ChannelCooldown;
  readonly billing: BillingService;
  readonly context: EngineContext;
  readonly config: ConfigStore;
  unary<Req extends { model: string }, A, R, B>(spec: UnaryEndpoint<Req, A, R, B>, req: Req, caller: RelayCaller): Promise<B>;
  /**
   * A streamed call. Throws when it fails before the first event (nothing was written; the caller answers with an
   * error). Once the sink started it never throws: the outcome says how it ended.
   */
  stream<Req extends { model: string }, A, E, S extends StreamSinkBase>(spec: StreamEndpoint<Req, A, E, S>, req: Req, caller: RelayCaller, sink: S): Promise<StreamOutcome>;
  count<Req extends { model: string }, A, R>(spec: CountEndpoint<Req, A, R>, req: Req, caller: RelayCaller): Promise<R>;
}

/** One upstream attempt's context: the channel, its model id for ours, the caller's signal and request id. */
export function upstreamCallFor(channel: ChannelConfig, model: string, caller: RelayCaller): UpstreamCall {
  return { channel, upstreamModel: upstreamModel(channel, model), signal: caller.signal, requestId: caller.requestId, droppedTools: caller.droppedTools };
}

/** An upstream failure outside failover, as the engine reports one: its 4xx passed on, else 502/504/429. */
export function relayErrorOf(err: unknown): unknown {
  if (!(err instanceof UpstreamError)) return err;
  return err.kind === 'status' && !err.retryable ? new UpstreamRejectedError(err.status ?? 400, err.upstreamCode, err.message, err.upstreamParam) : toUnavailable(err);
}

/** Tokens from a local count, when the upstream reported no usage. */
export function localUsage(prompt: number, completion: number): Metered {
  return { usage: plainUsage(prompt, completion) };
}

export function createRelayEngine(opts: RelayEngineOptions): RelayEngine {
  const cooldown = opts.cooldown instanceof ChannelCooldown ? opts.cooldown : new ChannelCooldown(opts.cooldown);
  const streamTtl = opts.streamHoldTtlSeconds ?? 2 * 3600;
  const ctx: EngineContext = { adapters: opts.adapters, responseIds: opts.responseIds, defaultCompletionCap: opts.defaultCompletionCap ?? DEFAULT_COMPLETION_CAP };
  const metered: MeteredRelay = createMeteredRelay({
    billing: opts.billing,
    cooldown,
    maxAttempts: opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    random: opts.random ?? Math.random,
    metrics: opts.metrics,
  });

  function prepare<Req extends { model: string }, A>(spec: EndpointSpec<Req, A>, req: Req, caller: RelayCaller) {
    const route = resolveModel(opts.config.current(), caller.key, req.model, spec.unpriced);
    spec.check?.(req, route);
    const plan = planOf(spec, req, caller, route);
    const want = spec.hold(req, route, ctx);
    return { route, plan, estimate: { prompt: Number(want.promptTokens ?? 0), amount: estimateCost(route.price, want, route.multiplier) } };
  }

  /** The able channels in the router's order (a 400 when none is), narrowed by the spec's plan. */
  function planOf<Req extends { model: string }, A>(
    spec: Pick<EndpointSpec<Req, A>, 'name' | 'adapterOf' | 'plan'>,
    req: Req,
    caller: RelayCaller,
    route: ModelRoute,
  ): CallPlan<Req> {
    const ordered = metered.candidates(route, (c) => spec.adapterOf(ctx.adapters, c) !== undefined, spec.name);
    return spec.plan ? spec.plan(req, caller, route, ordered, ctx) : { channels: ordered, req };
  }

  function charge(route: ModelRoute, m: Metered): CallCharge {
    if ('units' in m) return { quota: costOfUnits(route.price, m.units, route.multiplier), units: m.units, unit: m.unit };
    if ('quantity' in m) return { quota: costOfQuantity(route.price, m.unit, m.quantity, route.multiplier), units: m.quantity, unit: m.unit };
    return { quota: costOfUsage(route.price, m.usage, route.multiplier), usage: m.usage };
  }

  const adapterOf = <A>(spec: { adapterOf(adapters: UpstreamAdapters, channel: ChannelConfig): A | undefined }, ch: ChannelConfig): A =>
    spec.adapterOf(ctx.adapters, ch) as A;

  return {
    cooldown,
    billing: opts.billing,
    context: ctx,
    config: opts.config,

    async unary(spec, req, caller) {
      const { route, plan, estimate } = prepare(spec, req, caller);
      const result = await metered.unary(
        caller,
        route,
        plan.channels,
        { amount: estimate.amount, reason: spec.reason, ttlSeconds: metered.unaryTtl(plan.channels) },
        (ch) => spec.call(adapterOf(spec, ch), plan.req, upstreamCallFor(ch, route.model, caller), ch, caller, ctx),
        (r) => charge(route, spec.metered(r, estimate, { req: plan.req, route })),
      );
      return spec.body(result);
    },

    stream(spec, req, caller, sink) {
      const { route, plan, estimate } = prepare(spec, req, caller);
      let last: { stream: EventStream<unknown>; channel: ChannelConfig } | null = null;
      let wire: StreamWire<unknown> | null = null;
      const w = () => wire!;
      const driver: StreamDriver<unknown> = {
        start() {
          wire = spec.wire({ req: plan.req, route, estimate, caller, sink, stream: last!.stream as never, channel: last!.channel, ctx }) as StreamWire<unknown>;
          sink.start();
        },
        forward: (ev) => w().forward(ev),
        charge: () => charge(route, w().metered()),
        complete: () => w().complete(),
        fail: (kind) => (wire ? w().error(MID_STREAM_ERRORS[kind].code, MID_STREAM_ERRORS[kind].message) : undefined),
        end: () => sink.end(),
      };
      return metered.stream(
        caller,
        route,
        plan.channels,
        { amount: estimate.amount, reason: spec.reason, ttlSeconds: streamTtl },
        async (ch) => {
          const stream = await spec.open(adapterOf(spec, ch), plan.req, upstreamCallFor(ch, route.model, caller));
          last = { stream: stream as EventStream<unknown>, channel: ch };
          return stream as EventStream<unknown>;
        },
        driver,
      );
    },

    async count(spec, req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const plan = planOf(spec, req, caller, route);
      const channel = plan.channels[0];
      const adapter = adapterOf(spec, channel);
      const native = spec.native?.(adapter, plan.req, upstreamCallFor(channel, route.model, caller));
      if (native) {
        try {
          return await native;
        } catch (err) {
          // An upstream without the endpoint (404, 405) or out of service: count locally. Any other refusal is the
          // client's to see, in its family's format.
          if (!(err instanceof UpstreamError) || !(err.retryable || err.status === 404 || err.status === 405)) throw relayErrorOf(err);
          caller.log?.warn({ channel: channel.name, kind: err.kind }, `${spec.name} upstream failed; counted locally`);
        }
      }
      return spec.local(req);
    },
  };
}
