import type { ChannelConfig } from '../../gateway-config/schema';
import type { ChannelCooldown } from './cooldown';

/**
 * The order in which channels are tried: highest priority first; within one priority a weighted random order
 * (each next channel drawn with probability weight / remaining weight); cooled-down channels are skipped unless
 * every candidate is cooling (then all are tried, in the same order rules).
 */
export function orderCandidates(
  channels: readonly ChannelConfig[],
  cooldown: Pick<ChannelCooldown, 'isCooling'>,
  random: () => number = Math.random,
): ChannelConfig[] {
  if (channels.length <= 1) return channels.slice();
  const healthy = channels.filter((c) => !cooldown.isCooling(c.name));
  const pool = healthy.length > 0 ? healthy : channels.slice();
  const byPriority = new Map<number, ChannelConfig[]>();
  for (const c of pool) {
    const level = byPriority.get(c.priority);
    if (level) level.push(c);
    else byPriority.set(c.priority, [c]);
  }
  const out: ChannelConfig[] = [];
  for (const priority of [...byPriority.keys()].sort((a, b) => b - a)) {
    out.push(...weightedShuffle(byPriority.get(priority) as ChannelConfig[], random));
  }
  return out;
}

function weightedShuffle(level: ChannelConfig[], random: () => number): ChannelConfig[] {
  if (level.length === 1) return level;
  const left = level.slice();
  let total = left.reduce((s, c) => s + c.weight, 0);
  const out: ChannelConfig[] = [];
  while (left.length > 0) {
    let r = random() * total;
    let i = 0;
    for (; i < left.length - 1; i++) {
      r -= left[i].weight;
      if (r < 0) break;
    }
    const [picked] = left.splice(i, 1);
    total -= picked.weight;
    out.push(picked);
  }
  return out;
}
