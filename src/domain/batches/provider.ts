import { upstreamModel } from '../../gateway-config/lookup';
import type { ChannelConfig } from '../../gateway-config/schema';
import type { ConfigStore } from '../../gateway-config/store';
import type { BillingService } from '../billing/billing-service';
import { DomainError, QuotaExhaustedError } from '../errors';
import type { ApiKeyPrincipal } from '../keys/key-auth';
import type { ProviderBatchAdapter, ProviderLineResult } from '../ports/provider-batches';
import { costOfUsage } from '../pricing/cost';
import { decimal, decimalMul, type Decimal } from '../pricing/decimal';
import { resolveModel, type ModelRoute } from '../relay/resolve';
import type { BatchRecord } from './batch-record';
import type { BatchRepository, PendingLine } from '../ports/batches';
import { nowSeconds } from './ids';
import type { BatchLineEstimate } from './ports';
import { LINE_ENDPOINTS, lineUsage } from './line-endpoints';
import { sleep } from './runner';

/**
 * Lines sent to a provider's own batch API: the models of a batch whose first able channel declares `batch_api:
 * true` go to that channel as one provider batch, at the model's price times its `batch_multiplier` (0.5 unless the
 * config says). Each line holds its most before it is sent (a hold row of its own, business key `req:<batch
 * id>:<custom_id>`: it outlives any process), and is settled from the provider's usage or released when it failed.
 * The provider batch is created at most once: its row is written before the create, and a retried create first
 * searches the provider for it.
 */

export const DEFAULT_BATCH_MULTIPLIER = decimal('0.5');

/** How long a line's hold lasts: the provider's 24 hours, and the time to read its results back. */
const HOLD_TTL_SECONDS = 26 * 3600;

export interface ProviderDeps {
  batches: BatchRepository;
  config: ConfigStore;
  billing: BillingService;
  adapters: Record<string, ProviderBatchAdapter>;
  estimate: BatchLineEstimate;
  loadKey(tokenId: number): Promise<ApiKeyPrincipal>;
  onLine?(outcome: 'succeeded' | 'failed'): void;
}

const channelOf = (deps: ProviderDeps, name: string): ChannelConfig | undefined => deps.config.current().channels.find((c) => c.name === name);
const batchMultiplier = (route: ModelRoute): Decimal => decimalMul(route.multiplier, route.price.batch_multiplier ?? DEFAULT_BATCH_MULTIPLIER);

/**
 * Assigns the batch's pending lines whose model's first able channel has `batch_api: true` to that channel; answers
 * the channels with lines assigned and not yet ended. Run again (a retry, a continued run), it assigns nothing twice.
 */
export async function planProviderLines(deps: ProviderDeps, batchId: string): Promise<string[]> {
  const b = await deps.batches.get(batchId);
  if (!b || b.tokenId === null || (b.status !== 'in_progress' && b.status !== 'cancelling')) return [];
  const config = deps.config.current();
  if (!config.channels.some((c) => c.batch_api)) return existing(deps, batchId);
  const key = await deps.loadKey(b.tokenId).catch(() => null);
  if (!key) return existing(deps, batchId);
  for (const model of await deps.batches.pendingModels(batchId)) {
    let route: ModelRoute;
    try {
      route = resolveModel(config, key, model);
    } catch {
      continue; // the gateway's run answers the line with the error a single call would get
    }
    const channel = route.channels.find((c) => c.type === LINE_ENDPOINTS[b.endpoint].nativeType && (b.endpoint !== '/v1/responses' || c.responses_api));
    if (!channel?.batch_api || !deps.adapters[channel.type]) continue;
    await deps.batches.assignChannel(batchId, model, channel.name);
  }
  return existing(deps, batchId);
}

function existing(deps: ProviderDeps, batchId: string): Promise<string[]> {
  return deps.batches.channelsWithPending(batchId);
}

type Line = PendingLine & { body: Record<string, unknown> };

/** A line's error body in the batch's API format. */
function errorBody(b: BatchRecord, err: DomainError): unknown {
  if (b.api === 'anthropic') return { type: 'error', error: { type: err.status === 429 ? 'rate_limit_error' : 'invalid_request_error', message: err.message } };
  return { error: { message: err.message, type: err.status === 429 ? 'insufficient_quota' : 'invalid_request_error', param: err.param, code: err.code } };
}

/**
 * Holds each unsent line of `channel` and sends them as one provider batch (found rather than created again after a
 * crash); resolves with the provider batch's id, or null when no line could be sent.
 */
export async function submitProviderBatch(deps: ProviderDeps, batchId: string, channelName: string, signal: AbortSignal): Promise<string | null> {
  const { batches } = deps;
  const b = await batches.get(batchId);
  const channel = channelOf(deps, channelName);
  const adapter = channel ? deps.adapters[channel.type] : undefined;
  if (!b || b.tokenId === null || !channel || !adapter) return null;
  const recorded = await batches.providerBatch(batchId, channelName);
  if (recorded?.providerBatchId) return recorded.providerBatchId;
  if (b.status === 'cancelling') return null;

  const key = await deps.loadKey(b.tokenId);
  const lines = (await batches.channelLines(batchId, channelName)) as Line[];
  const failed: Array<{ idx: number; state: 'failed'; status: number; result: unknown }> = [];
  const send: Array<{ customId: string; body: unknown }> = [];
  let outOfQuota = false;
  for (const line of lines) {
    try {
      if (outOfQuota) throw new QuotaExhaustedError();
      const model = String(line.body.model);
      const route = resolveModel(deps.config.current(), key, model);
      const { amount } = deps.estimate(b.endpoint, line.body, route, batchMultiplier(route));
      await deps.billing.reserveHold({ businessKey: `req:${line.request_id}`, tokenId: key.tokenId, accountId: key.accountId, amount, reason: 'batch', ttlSeconds: HOLD_TTL_SECONDS });
      send.push({ customId: line.custom_id, body: { ...line.body, model: upstreamModel(channel, model) } });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      if (err instanceof QuotaExhaustedError) outOfQuota = true;
      failed.push({ idx: line.idx, state: 'failed', status: err.status, result: errorBody(b, err) });
    }
  }
  await batches.recordLines(batchId, failed);
  if (outOfQuota) await batches.markQuotaExhausted(batchId);
  if (send.length === 0) return null;

  // The row goes in before the create: a crash after the provider's create finds the batch there.
  const intentAt = await batches.recordProviderIntent(batchId, channelName, send.length, Date.now());
  const tag = `${batchId}/${channelName}`;
  const call = { channel, signal };
  const found = recorded ? await adapter.find(call, tag, { count: send.length, since: intentAt }) : null;
  const id = found ?? (await adapter.create(call, b.endpoint, send, tag));
  await batches.setProviderBatchId(batchId, channelName, id);
  return id;
}

/**
 * Waits for the provider batch to end (cancelling it when the batch is cancelled), then settles each line from the
 * provider's usage, or releases it: a line the provider never ran ends `canceled` or `expired`, unbilled.
 */
export async function collectProviderBatch(
  deps: ProviderDeps,
  batchId: string,
  channelName: string,
  opts: { signal: AbortSignal; heartbeat(): void; pollMs: { min: number; max: number } },
): Promise<void> {
  const { batches } = deps;
  const b0 = await batches.get(batchId);
  const channel = channelOf(deps, channelName);
  const row = await batches.providerBatch(batchId, channelName);
  if (!b0 || !channel || !row?.providerBatchId || b0.tokenId === null) return;
  const adapter = deps.adapters[channel.type];
  const id = row.providerBatchId;
  const call = { channel, signal: opts.signal };
  let wait = opts.pollMs.min;
  let cancelSent = false;
  for (;;) {
    opts.heartbeat();
    const b = await batches.get(batchId);
    if (b?.status === 'cancelling' && !cancelSent) {
      await adapter.cancel(call, id).catch(() => undefined);
      cancelSent = true;
    }
    if (await adapter.ended(call, id)) break;
    await sleep(wait, opts.signal);
    if (opts.signal.aborted) throw new Error('cancelled');
    wait = Math.min(opts.pollMs.max, wait * 2);
  }

  const results = new Map<string, ProviderLineResult>((await adapter.results(call, id)).map((r) => [r.customId, r]));
  const key = await deps.loadKey(b0.tokenId).catch(() => null);
  const lines = (await batches.channelLines(batchId, channelName, id)) as Line[];
  const outcomes: Array<{ idx: number; state: 'succeeded' | 'failed'; status: number; result: unknown }> = [];
  const notRun: number[] = [];
  for (const line of lines) {
    const r = results.get(line.custom_id);
    const businessKey = `req:${line.request_id}`;
    if (!r || !r.ok) {
      await deps.billing.releaseHold(businessKey);
      if (r) outcomes.push({ idx: line.idx, state: 'failed', status: r.status, result: r.body });
      else notRun.push(line.idx);
      continue;
    }
    const model = String(line.body.model);
    const route = key ? resolveModel(deps.config.current(), key, model) : null;
    const multiplier = route ? batchMultiplier(route) : DEFAULT_BATCH_MULTIPLIER;
    // The local count of the prompt (the body checked again) only when the provider reports no usage.
    const usage = lineUsage(b0.endpoint, r.body, () => (route ? deps.estimate(b0.endpoint, line.body, route, multiplier).prompt : 0));
    const quota = route ? costOfUsage(route.price, usage, multiplier) : 0;
    await deps.billing.settle({ kind: 'hold', businessKey, amount: 0 }, { quota, entry: { requestId: line.request_id, model, tokenName: b0.tokenName, channel: channelName, usage } });
    outcomes.push({ idx: line.idx, state: 'succeeded', status: 200, result: r.body });
    deps.onLine?.('succeeded');
  }
  await batches.recordLines(batchId, outcomes);
  if (notRun.length > 0) {
    const b = await batches.get(batchId);
    await batches.endUnsent(batchId, b?.status === 'cancelling' ? 'canceled' : 'expired', notRun);
  }
  await batches.providerBatchEnded(batchId, channelName, nowSeconds());
}
