import type { Pool } from 'pg';
import { upstreamModel } from '../../gateway-config/lookup';
import type { ChannelConfig } from '../../gateway-config/schema';
import type { ConfigStore } from '../../gateway-config/store';
import type { UpstreamCall } from '../../upstream/adapter';
import { BillingService } from '../billing/billing-service';
import type { RelayCaller } from './caller';
import { ChannelCooldown } from './cooldown';
import { DEFAULT_MAX_ATTEMPTS } from './failover';
import { createMeteredRelay, type MeteredRelay, type RelayMetrics } from './metered-call';

/** What every endpoint plugged into the relay engine takes besides its adapters (/v1/messages, /v1/responses). */
export interface EndpointOptions {
  db: Pool;
  config: ConfigStore;
  /** The process's billing (one group-commit queue per process); a new one without credit leases by default. */
  billing?: BillingService;
  /** Share the chat relay's (`relay.cooldown`), so every endpoint sees one channel health. */
  cooldown?: ChannelCooldown;
  maxAttempts?: number;
  streamHoldTtlSeconds?: number;
  random?: () => number;
  /** Upstream attempts and billed credits, for /metrics. */
  metrics?: RelayMetrics;
}

/** Where a stream of named events goes (`event: <name>` + `data: <json>`): Messages and Responses. */
export interface NamedEventSink {
  /** Once, when the first event is in hand: send the status line and headers now. */
  start(): void;
  /** One event; false (or a promise of false) when the client is gone. */
  send(event: string, data: string): boolean | Promise<boolean>;
  end(): void;
}

/** The engine for one endpoint, and its cooldown and stream hold lifetime. */
export function endpointEngine(opts: EndpointOptions): { metered: MeteredRelay; cooldown: ChannelCooldown; streamTtl: number } {
  const cooldown = opts.cooldown ?? new ChannelCooldown();
  const metered = createMeteredRelay({
    billing: opts.billing ?? new BillingService(opts.db, { leases: false }),
    cooldown,
    maxAttempts: opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    random: opts.random ?? Math.random,
    metrics: opts.metrics,
  });
  return { metered, cooldown, streamTtl: opts.streamHoldTtlSeconds ?? 2 * 3600 };
}

/** One upstream attempt's context: the channel, its model id for ours, the caller's signal and request id. */
export function upstreamCallFor(channel: ChannelConfig, model: string, caller: RelayCaller): UpstreamCall {
  return { channel, upstreamModel: upstreamModel(channel, model), signal: caller.signal, requestId: caller.requestId };
}
