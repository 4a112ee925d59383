import { ModelNotPricedError } from '../domain/errors';
import { type Decimal, ONE } from '../domain/pricing/decimal';
import { type ChannelConfig, DEFAULT_GROUP, type GatewayConfig, type GroupConfig, type ModelPrice } from './schema';

/** The model's price; ModelNotPricedError (400, naming the model) when the config gives it none. */
export function modelPrice(config: GatewayConfig, model: string): ModelPrice {
  const price = Object.hasOwn(config.models, model) ? config.models[model] : undefined;
  if (!price) throw new ModelNotPricedError(model);
  return price;
}

/** What `groups:` says of a key group (its multiplier and its keys' default limits); '' is the default group. */
export function groupSettings(config: GatewayConfig, group: string): GroupConfig | undefined {
  const g = group === '' ? DEFAULT_GROUP : group;
  return Object.hasOwn(config.groups, g) ? config.groups[g] : undefined;
}

/** The price multiplier of a key group: 1 unless `groups:` lists it. */
export function groupMultiplier(config: GatewayConfig, group: string): Decimal {
  return groupSettings(config, group)?.multiplier ?? ONE;
}

/** Enabled channels serving `model` to `group`, in file order (the router orders by priority and weight). */
export function channelsServing(config: GatewayConfig, model: string, group: string): ChannelConfig[] {
  const g = group === '' ? DEFAULT_GROUP : group;
  return config.channels.filter((c) => c.models.includes(model) && c.groups.includes(g));
}

/** The channel named `name` when it serves the key group `group` (whatever the model), else undefined. */
export function channelForGroup(config: GatewayConfig, name: string, group: string): ChannelConfig | undefined {
  const g = group === '' ? DEFAULT_GROUP : group;
  return config.channels.find((c) => c.name === name && c.groups.includes(g));
}

/** The id to send upstream on this channel. */
export function upstreamModel(channel: ChannelConfig, model: string): string {
  return Object.hasOwn(channel.model_mapping, model) ? (channel.model_mapping[model] as string) : model;
}
