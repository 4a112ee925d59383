import { channelsServing, groupMultiplier, modelPrice } from '../../gateway-config/lookup';
import type { ChannelConfig, GatewayConfig, ModelPrice } from '../../gateway-config/schema';
import type { Decimal } from '../pricing/decimal';
import { ModelNotAllowedError, ModelNotFoundError } from '../errors';

/** What one model means for one key group under one config snapshot. */
export interface ModelRoute {
  model: string;
  /** Enabled channels serving the model to the group, in file order (the router orders them per call). */
  channels: readonly ChannelConfig[];
  price: ModelPrice;
  multiplier: Decimal;
}

interface Entry {
  channels: readonly ChannelConfig[];
  /** Undefined: served but not priced (modelPrice throws the 400 at request time). */
  price: ModelPrice | undefined;
  multiplier: Decimal;
}

/** Per snapshot: the snapshot is frozen, so its lookups never change; a reload makes a new map. */
const cache = new WeakMap<GatewayConfig, Map<string, Entry>>();

/**
 * The route of `model` for a key: 403 when the key's allowlist excludes it (nothing is held or charged), 404
 * `model_not_found` when no enabled channel serves it to the key's group, 400 `model_not_priced` when it is
 * served but has no price (unless the endpoint gives `unpriced`, a price of its own). Cached per config snapshot (no work per request beyond two map lookups).
 */
export function resolveModel(config: GatewayConfig, key: { group: string; models: readonly string[] }, model: string, unpriced?: ModelPrice): ModelRoute {
  if (key.models.length > 0 && !key.models.includes(model)) throw new ModelNotAllowedError(model);
  let byKey = cache.get(config);
  if (!byKey) {
    byKey = new Map();
    cache.set(config, byKey);
  }
  const cacheKey = `${key.group}\u0000${model}`;
  let entry = byKey.get(cacheKey);
  if (!entry) {
    const channels = Object.freeze(channelsServing(config, model, key.group));
    entry = {
      channels,
      price: Object.hasOwn(config.models, model) ? config.models[model] : undefined,
      multiplier: groupMultiplier(config, key.group),
    };
    if (byKey.size < 100_000) byKey.set(cacheKey, entry);
  }
  if (entry.channels.length === 0) throw new ModelNotFoundError(model);
  const price = entry.price ?? unpriced ?? modelPrice(config, model);
  return { model, channels: entry.channels, price, multiplier: entry.multiplier };
}
