import type { ChannelConfig } from '../../gateway-config/schema';

/**
 * What a cloud channel's calls share (a parsed key, a credential's cache id, a signer), computed on the channel's
 * first call instead of on every call. Keyed by the channel object: a config snapshot is frozen, and a reload makes
 * new objects, so a changed credential is computed afresh. A computation that throws is not kept.
 */
export function perChannel<T>(compute: (channel: ChannelConfig) => T): (channel: ChannelConfig) => T {
  const memo = new WeakMap<ChannelConfig, T>();
  return (channel) => {
    if (memo.has(channel)) return memo.get(channel)!;
    const value = compute(channel);
    memo.set(channel, value);
    return value;
  };
}
