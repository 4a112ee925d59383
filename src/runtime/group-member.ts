import cluster from 'node:cluster';
import type { Registry } from 'prom-client';
import type { ProcessGroupView } from '../api/deps';
import { isGatewayMessage, type MemberMessage, type PrimaryMessage } from './group-messages';

/** How long a member's /metrics waits for the group's answer before it says the group did not answer. */
const GROUP_METRICS_TIMEOUT_MS = 5_000;

/** Where this process sits in a group, from the environment its primary forked it with; null when alone. */
export function groupMembership(env: NodeJS.ProcessEnv = process.env): { index: number; size: number } | null {
  if (!cluster.isWorker || env.GATEWAY_PROCESS_INDEX === undefined) return null;
  return { index: Number(env.GATEWAY_PROCESS_INDEX), size: Number(env.GATEWAY_PROCESS_COUNT) };
}

function send(msg: MemberMessage): void {
  if (process.connected) process.send?.(msg);
}

/**
 * Joins the group (of `size` processes), so that `/metrics` and `/readyz` answer for all of it whichever process a
 * scrape or a probe reaches: answers the primary's requests for this process's metrics from the registry it is given
 * once the services exist, and follows the group's readiness. Returns the view the api serves from, and a way to say
 * this process is ready.
 */
export function joinProcessGroup(size: number) {
  let registry: Registry | null = null;
  let ready = 0;
  let of = size;
  let next = 1;
  const waiting = new Map<number, { resolve: (v: { text: string; contentType: string }) => void; reject: (e: Error) => void }>();
  const onMessage = (msg: unknown) => {
    if (!isGatewayMessage<PrimaryMessage>(msg)) return;
    if (msg.type === 'gateway:own-metrics') {
      if (!registry) return send({ type: 'gateway:own-metrics', id: msg.id, metrics: null });
      registry.getMetricsAsJSON().then(
        (metrics) => send({ type: 'gateway:own-metrics', id: msg.id, metrics }),
        () => send({ type: 'gateway:own-metrics', id: msg.id, metrics: null }),
      );
    } else if (msg.type === 'gateway:group-metrics') {
      const w = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (!w) return;
      if (msg.text !== undefined && msg.contentType) w.resolve({ text: msg.text, contentType: msg.contentType });
      else w.reject(new Error(msg.error ?? 'the process group did not answer'));
    } else if (msg.type === 'gateway:group') {
      ready = msg.ready;
      of = msg.of;
    }
  };
  process.on('message', onMessage);
  const view: ProcessGroupView = {
    metrics() {
      const id = next++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error(`the process group did not answer within ${GROUP_METRICS_TIMEOUT_MS / 1000} s`));
        }, GROUP_METRICS_TIMEOUT_MS);
        timer.unref();
        waiting.set(id, {
          resolve: (v) => (clearTimeout(timer), resolve(v)),
          reject: (e) => (clearTimeout(timer), reject(e)),
        });
        send({ type: 'gateway:group-metrics', id });
      });
    },
    readiness: () => (ready >= of ? 'ok' : `down: ${ready} of ${of} processes serve`),
  };
  return {
    view,
    setRegistry: (r: Registry) => void (registry = r),
    announceReady: (index: number, banner: string[]) => send({ type: 'gateway:ready', index, banner, rssBytes: process.memoryUsage.rss() }),
  };
}
