import { isVideoChannelType } from '../ports/video';
import type { ChannelConfig } from '../../gateway-config/schema';
import type { ChannelCooldown } from './cooldown';
import type { UsageReports } from '../ports/usage';

/** One channel as the console's Channels page shows it: what it serves and how it has been doing. */
export interface ChannelHealth {
  name: string;
  type: string;
  models: string[];
  priority: number;
  weight: number;
  /** `replica`: the last upstream attempts this process made (relay channels); `tasks_24h`: video tasks finished in 24 h. */
  source: 'replica' | 'tasks_24h';
  attempts: number;
  success_rate: number | null;
  latency_ms_p50: number | null;
  latency_ms_p95: number | null;
  consecutive_failures: number;
  cooling_until: number | null;
  last_attempt_at: number | null;
}

/**
 * The health of every configured channel. Relay channels report this replica's recent window (the cool-down
 * state is per replica too); video channels, whose calls run in workers, report the tasks they finished in the
 * last 24 hours, all replicas and accounts together (counts only). Never a base URL or a key.
 */
export async function channelHealth(usage: Pick<UsageReports, 'videoChannelsDay'>, channels: ChannelConfig[], cooldown: ChannelCooldown): Promise<ChannelHealth[]> {
  const video = channels.some((c) => isVideoChannelType(c.type)) ? await usage.videoChannelsDay() : [];
  const byChannel = new Map(video.map((r) => [r.channel, r]));
  return channels.map((c) => {
    const base = { name: c.name, type: c.type, models: c.models, priority: c.priority, weight: c.weight };
    if (isVideoChannelType(c.type)) {
      const r = byChannel.get(c.name);
      return {
        ...base,
        source: 'tasks_24h' as const,
        attempts: r?.done ?? 0,
        success_rate: r && r.done ? r.ok / r.done : null,
        latency_ms_p50: r?.p50 == null ? null : Math.round(Number(r.p50)),
        latency_ms_p95: r?.p95 == null ? null : Math.round(Number(r.p95)),
        consecutive_failures: 0,
        cooling_until: null,
        last_attempt_at: r?.last == null ? null : Math.round(Number(r.last)),
      };
    }
    const h = cooldown.report(c.name);
    return {
      ...base,
      source: 'replica' as const,
      attempts: h.attempts,
      success_rate: h.successRate,
      latency_ms_p50: h.latencyMsP50,
      latency_ms_p95: h.latencyMsP95,
      consecutive_failures: h.consecutiveFailures,
      cooling_until: h.coolingUntil,
      last_attempt_at: h.lastAttemptAt,
    };
  });
}
