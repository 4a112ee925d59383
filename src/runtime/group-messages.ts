import type { MetricObjectWithValues, MetricValue } from 'prom-client';

/** One process's metrics as prom-client's cluster aggregator takes them. */
export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/**
 * What the processes of one group (`--processes N`) say to each other over the cluster's IPC channel. A member is a
 * serving process; the primary forks them, serves nothing, and answers for the group.
 */
export type MemberMessage =
  /** Started and listening: its banner (member 0's is printed) and its resident memory. */
  | { type: 'gateway:ready'; index: number; banner: string[]; rssBytes: number }
  /** Its /metrics asks for the whole group's. */
  | { type: 'gateway:group-metrics'; id: number }
  /** Its own metrics, as the primary asked. */
  | { type: 'gateway:own-metrics'; id: number; metrics: MetricsJson | null };

export type PrimaryMessage =
  /** The group's metrics, as a member asked (text exposition format), or why there are none. */
  | { type: 'gateway:group-metrics'; id: number; text?: string; contentType?: string; error?: string }
  /** Send your own metrics. */
  | { type: 'gateway:own-metrics'; id: number }
  /** How many of the group's processes serve, of how many it runs. */
  | { type: 'gateway:group'; ready: number; of: number };

export function isGatewayMessage<T extends { type: string }>(msg: unknown): msg is T {
  return typeof msg === 'object' && msg !== null && typeof (msg as { type?: unknown }).type === 'string' && (msg as { type: string }).type.startsWith('gateway:');
}
