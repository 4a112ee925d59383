import { tracingEnabled, upstreamSpan } from '../../tracing';
import type { ChannelConfig } from '../../gateway-config/schema';
import type { BillingService, CallHold } from '../billing/billing-service';
import { promptTokensOf, type TokenUsage } from '../pricing/usage';
import { UnavailableError } from '../errors';
import { UpstreamError } from '../ports/upstream-error';
import type { ChannelCooldown } from './cooldown';
import { ClientGoneError, EndpointNotSupportedError } from './errors';
import { withFailover } from './failover';
import type { ModelRoute } from './resolve';
import { orderCandidates } from './router';
import type { RelayCaller } from './caller';

/**
 * Relaying one call with failover and metering, whatever its shapes (chat, embeddings, images, /v1/messages;
 * plain or streamed): hold the most it can cost, try the channels in the router's order until one answers (for
 * a stream: until its first event is in hand, before anything reached the client), then settle the actual cost
 * or release the hold. Failures, upstream errors and a client that went away are never billed.
 */

/** What the relay reports for /metrics (src/observability/metrics.ts implements it). */
export interface RelayMetrics {
  upstream: { observe(labels: { channel: string; outcome: 'ok' | 'error' }, seconds: number): void };
  upstreamErrors: { inc(labels: { channel: string; kind: string }): void };
  creditsBilled: { inc(labels: { source: string }, value: number): void };
  /** Billed tokens by dimension (a settled call's usage). */
  tokensBilled(usage: TokenUsage | undefined): void;
}

export interface MeterOptions {
  billing: BillingService;
  cooldown: ChannelCooldown;
  maxAttempts: number;
  random: () => number;
  metrics?: RelayMetrics;
}

/** The hold a call takes before its first upstream attempt. */
export interface HoldSpec {
  amount: number;
  reason: string;
  ttlSeconds: number;
}

/** What a finished call costs (credits) and what the ledger row shows of its usage. */
export interface CallCharge {
  quota: number;
  usage?: TokenUsage;
  units?: number;
  /** What `units` counts (src/domain/billing/operations.ts). */
  unit?: string;
}

/** An upstream stream as the relay reads it. */
export interface EventStream<E> extends AsyncIterable<E> {
  cancel(): void;
}

/** The client side of a stream: one implementation per wire format (chat SSE, Messages SSE). */
export interface StreamDriver<E> {
  /** Once, when the first event is in hand: status line and headers. */
  start(): void;
  /** Forwards one event; false (or a promise of false) when the client is gone. */
  forward(ev: E): boolean | Promise<boolean>;
  /** The charge once the upstream stream ended (its usage, or a local count). */
  charge(): CallCharge;
  /** After the settle: the closing event(s) (`[DONE]`, the held-back `message_stop`). */
  complete(): unknown;
  /** An error event in the stream's own format; `billing` when the settle failed, else the upstream failed. */
  fail(kind: 'upstream' | 'billing'): unknown;
  end(): void;
}

export type StreamOutcome =
  /** Billed; `quota` is what it cost (the ledger row may record part of it as a shortfall). */
  | { status: 'completed'; channel: string; quota: number }
  /** The upstream failed after the first byte reached the client: an error event was sent; not billed. */
  | { status: 'upstream_failed'; channel: string }
  /** The client went away mid-stream (write_response_body_failed): upstream aborted, not billed. */
  | { status: 'client_gone'; channel: string }
  /** Settling failed: the hold stays for the sweeper (not billed); an error event was sent. */
  | { status: 'billing_failed'; channel: string };

export interface MeteredRelay {
  /** The route's channels that `able` accepts, in try order; `endpoint` names the call in the error when none can. */
  candidates(route: ModelRoute, able: (c: ChannelConfig) => boolean, endpoint: string): ChannelConfig[];
  /** Hold TTL for a plain call: every attempt may take its channel's whole timeout. */
  unaryTtl(channels: readonly ChannelConfig[]): number;
  unary<T>(
    caller: RelayCaller,
    route: ModelRoute,
    channels: ChannelConfig[],
    hold: HoldSpec,
    run: (channel: ChannelConfig) => Promise<T>,
    charge: (result: T) => CallCharge,
  ): Promise<T>;
  /**
   * A streamed call. Throws when it fails before the first event (nothing was written; the caller answers with an
   * error). Once `driver.start()` ran it never throws: the outcome says how it ended.
   */
  stream<E>(
    caller: RelayCaller,
    route: ModelRoute,
    channels: ChannelConfig[],
    hold: HoldSpec,
    open: (channel: ChannelConfig) => Promise<EventStream<E>>,
    driver: StreamDriver<E>,
  ): Promise<StreamOutcome>;
}

export function createMeteredRelay(opts: MeterOptions): MeteredRelay {
  const { billing, cooldown, maxAttempts, random, metrics } = opts;

  /** One upstream attempt, timed into the metrics and the channel's recent health (GET /api/channel/). */
  function timed<R>(attempt: (channel: ChannelConfig) => Promise<R>): (channel: ChannelConfig) => Promise<R> {
    return async (channel) => {
      const started = performance.now();
      try {
        const r = tracingEnabled()
          ? await upstreamSpan(`upstream ${channel.type}`, { 'gateway.channel': channel.name, 'gateway.channel_type': channel.type }, () => attempt(channel))
          : await attempt(channel);
        const ms = performance.now() - started;
        cooldown.recordAttempt(channel.name, true, ms);
        metrics?.upstream.observe({ channel: channel.name, outcome: 'ok' }, ms / 1000);
        return r;
      } catch (err) {
        const ms = performance.now() - started;
        cooldown.recordAttempt(channel.name, false, ms);
        metrics?.upstream.observe({ channel: channel.name, outcome: 'error' }, ms / 1000);
        metrics?.upstreamErrors.inc({ channel: channel.name, kind: err instanceof UpstreamError ? err.kind : 'error' });
        throw err;
      }
    };
  }

  function failoverOpts(caller: RelayCaller) {
    return {
      maxAttempts,
      signal: caller.signal,
      onAttemptFailed: (channel: ChannelConfig, err: UpstreamError) =>
        caller.log?.warn({ channel: channel.name, kind: err.kind, status: err.status ?? undefined }, 'upstream attempt failed'),
    };
  }

  function openCallHold(caller: RelayCaller, hold: HoldSpec): Promise<CallHold> {
    return billing.hold({ requestId: caller.requestId, tokenId: caller.key.tokenId, accountId: caller.key.accountId, ...hold, period: caller.period });
  }

  const release = (hold: CallHold, caller: RelayCaller) =>
    billing.release(hold, (e) => caller.log?.error({ err: e }, 'releasing a hold failed; the sweeper will'));

  /**
   * Bills the call; resolves once the bill outlives this process (billing.bill), so the answer may leave. What
   * PostgreSQL answered (what was billed, a shortfall) goes to the metrics and the log when it arrives.
   */
  async function bill(
    hold: CallHold,
    caller: RelayCaller,
    route: ModelRoute,
    channel: ChannelConfig,
    isStream: boolean,
    c: CallCharge,
    started: number,
  ): Promise<void> {
    const { outcome } = await billing.bill(hold, {
      quota: c.quota,
      entry: {
        requestId: caller.requestId,
        model: route.model,
        tokenName: caller.key.name,
        channel: channel.name,
        isStream,
        usage: c.usage,
        units: c.units,
        unit: c.unit,
        latencyMs: Date.now() - started,
      },
    });
    outcome.then(
      (result) => {
        if (result.status !== 'settled') return;
        metrics?.creditsBilled.inc({ source: 'relay' }, result.billed);
        metrics?.tokensBilled(c.usage);
        if (c.usage && caller.onBilledTokens) caller.onBilledTokens(promptTokensOf(c.usage) + c.usage.output);
        if (result.shortfall > 0) {
          caller.log?.warn({ cost: c.quota, held: hold.amount, shortfall: result.shortfall, model: route.model }, 'balance could not cover the whole cost; shortfall recorded');
        }
      },
      (err: unknown) => caller.log?.error({ err }, 'a journaled settle did not reach PostgreSQL; the journal keeps it for the next process'),
    ).catch((err: unknown) => caller.log?.error({ err }, 'recording a settled call failed'));
  }

  return {
    candidates(route, able, endpoint) {
      const list = route.channels.filter(able);
      if (list.length === 0) throw new EndpointNotSupportedError(route.model, endpoint);
      return orderCandidates(list, cooldown, random);
    },

    unaryTtl(channels) {
      const longest = channels.reduce((m, c) => Math.max(m, c.timeout_ms), 0);
      return Math.ceil((longest * Math.min(maxAttempts, channels.length)) / 1000) + 60;
    },

    async unary<T>(
      caller: RelayCaller,
      route: ModelRoute,
      channels: ChannelConfig[],
      holdSpec: HoldSpec,
      run: (channel: ChannelConfig) => Promise<T>,
      charge: (result: T) => CallCharge,
    ): Promise<T> {
      const started = Date.now();
      const hold = await openCallHold(caller, holdSpec);
      let answered: { result: T; channel: ChannelConfig; cost: CallCharge };
      const upstreamStarted = performance.now();
      try {
        const { result, channel } = await withFailover(channels, cooldown, timed(run), failoverOpts(caller));
        if (caller.timing) caller.timing.upstreamMs = performance.now() - upstreamStarted;
        if (caller.signal.aborted) throw new ClientGoneError();
        answered = { result, channel, cost: charge(result) };
      } catch (err) {
        await release(hold, caller);
        throw clientGone(err, caller);
      }
      // Billed before it is delivered (docs/decisions/0037-a-delivered-answer-is-billed.md): the settle is journaled
      // or has committed when the answer leaves, so a process that dies right after delivering it has billed it. A
      // settle that fails leaves the hold to the sweeper and the answer undelivered: nothing is billed.
      const billingStarted = performance.now();
      try {
        await bill(hold, caller, route, answered.channel, false, answered.cost, started);
        if (caller.timing) caller.timing.billingMs = performance.now() - billingStarted;
      } catch (err) {
        caller.log?.error({ err }, 'settling a call failed; the answer is withheld and not billed');
        throw new UnavailableError('The answer could not be billed, so it was not delivered. Try again');
      }
      return answered.result;
    },

    async stream(caller, route, channels, holdSpec, open, driver) {
      const started = Date.now();
      const hold = await openCallHold(caller, holdSpec);

      // Failover until a channel produced its first event; nothing has been written to the client before that.
      let opened: { stream: EventStream<unknown>; it: AsyncIterator<unknown>; first: unknown };
      let channel: ChannelConfig;
      const upstreamStarted = performance.now();
      try {
        ({ result: opened, channel } = await withFailover(
          channels,
          cooldown,
          timed(async (ch) => {
            const stream = await open(ch);
            const it = stream[Symbol.asyncIterator]();
            try {
              const first = await it.next();
              if (first.done) throw new UpstreamError('protocol', 'the upstream stream ended before its first event');
              return { stream, it, first: first.value };
            } catch (err) {
              stream.cancel();
              throw err;
            }
          }),
          failoverOpts(caller),
        ));
      } catch (err) {
        await release(hold, caller);
        throw clientGone(err, caller);
      }

      // First byte: from here on, no failover and no exception to the caller.
      if (caller.timing) caller.timing.upstreamMs = performance.now() - upstreamStarted;
      driver.start();
      try {
        let ev = opened.first;
        for (;;) {
          const sent = driver.forward(ev as never);
          if (!(typeof sent === 'boolean' ? sent : await sent) || caller.signal.aborted) throw new ClientGoneError();
          const next = await opened.it.next();
          if (next.done) break;
          ev = next.value;
        }
      } catch (err) {
        opened.stream.cancel();
        await release(hold, caller);
        if (err instanceof ClientGoneError || caller.signal.aborted) {
          caller.log?.warn({ channel: channel.name, code: 'write_response_body_failed' }, 'client went away mid-stream; not billed');
          driver.end();
          return { status: 'client_gone', channel: channel.name };
        }
        caller.log?.warn({ channel: channel.name, kind: err instanceof UpstreamError ? err.kind : 'error' }, 'upstream failed mid-stream; not billed');
        if (!(err instanceof UpstreamError)) caller.log?.error({ err }, 'stream relay failed');
        cooldown.recordFailure(channel.name);
        await driver.fail('upstream');
        driver.end();
        return { status: 'upstream_failed', channel: channel.name };
      }

      try {
        const charge = driver.charge();
        await bill(hold, caller, route, channel, true, charge, started);
        await driver.complete();
        driver.end();
        return { status: 'completed', channel: channel.name, quota: charge.quota };
      } catch (err) {
        caller.log?.error({ err }, 'settling a stream failed; the hold stays for the sweeper');
        await driver.fail('billing');
        driver.end();
        return { status: 'billing_failed', channel: channel.name };
      }
    },
  };
}

/** An abort caused by the client is reported as ClientGoneError; anything else unchanged. */
function clientGone(err: unknown, caller: RelayCaller): unknown {
  if (err instanceof UpstreamError && (err.kind === 'aborted' || caller.signal.aborted)) return new ClientGoneError();
  return err;
}
