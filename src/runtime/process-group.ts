import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';
import { isGatewayMessage, type MemberMessage, type MetricsJson, type PrimaryMessage } from './group-messages';

/** A member that crashed is replaced after this delay, doubled for each crash in the window, up to the cap. */
export const RESTART_DELAY_MS = { first: 250, max: 30_000 };
/** This many crashes within the window is a crash loop: the group stops instead of spinning. */
export const CRASH_LOOP = { crashes: 5, windowMs: 60_000 };
/** How long a stopping group waits for its members to drain (each has its own 30 s limit) before killing them. */
const STOP_TIMEOUT_MS = 40_000;
/** How long the primary waits for each member's metrics when a scrape asks for the group's. */
const COLLECT_TIMEOUT_MS = 3_000;

export interface ProcessGroupOptions {
  size: number;
  /** The environment of member `index` beyond the primary's own (its role, for instance). */
  memberEnv(index: number): Record<string, string>;
  say(line: string): void;
  warn(line: string): void;
  /** Rows the primary adds to member 0's banner (what it alone knows: the processes and their memory). */
  bannerRows(members: { index: number; pid: number; rssBytes: number }[]): string[];
}

interface Slot {
  index: number;
  worker: Worker | null;
  ready: boolean;
  rssBytes: number;
  /** Ready at least once: a member that never was failed to start, not crashed. */
  everReady: boolean;
}

/**
 * The primary of a process group (`--processes N`, node:cluster): forks N members that share one listening port
 * (the primary hands out connections in turn), serves nothing itself, answers the group's metrics and readiness to
 * its members, forwards SIGHUP to all, drains all on SIGTERM/SIGINT, and replaces a member that crashes, with a
 * backoff, until crashes come too fast (a crash loop), when it stops the group with an error. Resolves with the
 * process's exit code once every member has exited.
 */
export async function runProcessGroup(opts: ProcessGroupOptions): Promise<number> {
  const registry = new Registry();
  const restarts = new Counter({ name: 'gateway_process_restarts_total', help: 'Processes of the group replaced after they exited unexpectedly', registers: [registry] });
  const slots: Slot[] = Array.from({ length: opts.size }, (_, index) => ({ index, worker: null, ready: false, rssBytes: 0, everReady: false }));
  const serving = () => slots.filter((s) => s.ready).length;
  const living = () => slots.filter((s) => s.worker && !s.worker.isDead()).map((s) => s.worker!);
  const signalAll = (signal: NodeJS.Signals) => {
    for (const w of living()) w.process.kill(signal);
  };
  new Gauge({
    name: 'gateway_processes',
    help: 'Processes of the group, by state (serving, starting)',
    labelNames: ['state'],
    registers: [registry],
    aggregator: 'first',
    collect() {
      const n = serving();
      this.set({ state: 'serving' }, n);
      this.set({ state: 'starting' }, opts.size - n);
    },
  });
  const crashes: number[] = [];
  let stopping = false;
  let exitCode = 0;
  let banner = null as string[] | null;
  let nextCollect = 1;
  const collecting = new Map<number, { pending: Set<number>; results: MetricsJson[]; done: () => void }>();
  let settleAll: () => void = () => {};
  const allExited = new Promise<void>((resolve) => (settleAll = resolve));

  const broadcast = (msg: PrimaryMessage) => {
    for (const s of slots) if (s.worker?.isConnected()) s.worker.send(msg);
  };
  const announceReadiness = () => broadcast({ type: 'gateway:group', ready: serving(), of: opts.size });

  /** Every serving member's metrics and the primary's own, aggregated. */
  const groupMetrics = async (): Promise<string> => {
    const id = nextCollect++;
    const members = slots.filter((s) => s.ready && s.worker?.isConnected());
    const results: MetricsJson[] = [await registry.getMetricsAsJSON()];
    await new Promise<void>((resolve) => {
      const pending = new Set(members.map((s) => s.worker!.id));
      const timer = setTimeout(resolve, COLLECT_TIMEOUT_MS);
      const done = () => (clearTimeout(timer), resolve());
      collecting.set(id, { pending, results, done });
      if (pending.size === 0) done();
      for (const s of members) s.worker!.send({ type: 'gateway:own-metrics', id } satisfies PrimaryMessage);
    });
    collecting.delete(id);
    return AggregatorRegistry.aggregate(results).metrics();
  };

  const stopAll = (code: number, reason: string) => {
    if (stopping) return;
    stopping = true;
    exitCode = Math.max(exitCode, code);
    opts.say(`Stopping the group of ${opts.size} processes (${reason})...`);
    signalAll('SIGTERM');
    setTimeout(() => {
      opts.warn(`processes still running ${STOP_TIMEOUT_MS / 1000} s after the stop; killing them`);
      signalAll('SIGKILL');
    }, STOP_TIMEOUT_MS).unref();
    if (living().length === 0) settleAll();
  };

  let firstReady: () => void = () => {};
  let firstFailed: (err: Error) => void = () => {};
  const fork = (slot: Slot) => {
    const worker = cluster.fork({ ...opts.memberEnv(slot.index), GATEWAY_PROCESS_INDEX: String(slot.index), GATEWAY_PROCESS_COUNT: String(opts.size) });
    slot.worker = worker;
    slot.ready = false;
    // A message to a process that just died fails (EPIPE): its 'exit' follows and handles it; the primary goes on.
    worker.on('error', (err) => opts.warn(`process ${slot.index}: ${err.message}`));
    worker.on('message', (msg: unknown) => {
      if (!isGatewayMessage<MemberMessage>(msg)) return;
      if (msg.type === 'gateway:ready') {
        slot.ready = true;
        slot.everReady = true;
        slot.rssBytes = msg.rssBytes;
        if (msg.index === 0) banner = msg.banner;
        announceReadiness();
        firstReady();
      } else if (msg.type === 'gateway:group-metrics') {
        groupMetrics().then(
          (text) => worker.isConnected() && worker.send({ type: 'gateway:group-metrics', id: msg.id, text, contentType: registry.contentType } satisfies PrimaryMessage),
          (err: Error) => worker.isConnected() && worker.send({ type: 'gateway:group-metrics', id: msg.id, error: err.message } satisfies PrimaryMessage),
        );
      } else if (msg.type === 'gateway:own-metrics') {
        const c = collecting.get(msg.id);
        if (!c || !c.pending.delete(worker.id)) return;
        if (msg.metrics) c.results.push(msg.metrics);
        if (c.pending.size === 0) c.done();
      }
    });
    worker.on('exit', (code, signal) => {
      slot.worker = null;
      slot.ready = false;
      for (const c of collecting.values()) if (c.pending.delete(worker.id) && c.pending.size === 0) c.done();
      if (stopping) {
        if (code !== 0) exitCode = 1;
        if (living().length === 0) settleAll();
        return;
      }
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      if (slots.every((s) => !s.everReady)) {
        // The first start failed (its own output says why): a bad setting, not a crash worth retrying.
        firstFailed(new Error(`process ${slot.index} (pid ${worker.process.pid}) stopped before it served (${how})`));
        return;
      }
      announceReadiness();
      const now = Date.now();
      crashes.push(now);
      while (crashes.length > 0 && crashes[0] < now - CRASH_LOOP.windowMs) crashes.shift();
      restarts.inc();
      if (crashes.length >= CRASH_LOOP.crashes) {
        opts.warn(`crash loop: ${crashes.length} processes exited within ${CRASH_LOOP.windowMs / 1000} s (the last: process ${slot.index}, ${how}); stopping the group`);
        stopAll(1, 'crash loop');
        return;
      }
      const delay = Math.min(RESTART_DELAY_MS.max, RESTART_DELAY_MS.first * 2 ** (crashes.length - 1));
      opts.warn(`process ${slot.index} (pid ${worker.process.pid}) exited unexpectedly (${how}); starting a new one in ${delay} ms`);
      // Not unref'd: with every member dead, this timer is what keeps the primary alive to start the next.
      setTimeout(() => {
        if (!stopping) fork(slot);
      }, delay);
    });
  };

  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stopAll(0, signal));
  // Every member re-reads GATEWAY_CONFIG; the primary itself has nothing to reload, and must not exit.
  process.on('SIGHUP', () => signalAll('SIGHUP'));

  const started = (count: number) =>
    new Promise<void>((resolve, reject) => {
      firstFailed = reject;
      firstReady = () => {
        if (serving() >= count) resolve();
      };
    });
  try {
    // Member 0 first, alone: it applies the migrations and makes the first account; the others then find both done.
    const first = started(1);
    fork(slots[0]);
    await first;
    const rest = started(opts.size);
    for (const slot of slots.slice(1)) fork(slot);
    await rest;
  } catch (err) {
    if (!stopping) {
      opts.warn((err as Error).message);
      stopAll(1, 'a process failed to start');
    }
  }
  if (!stopping) {
    const members = slots.map((s) => ({ index: s.index, pid: s.worker?.process.pid ?? 0, rssBytes: s.rssBytes }));
    const lines: string[] = banner ? [...banner] : [];
    // After member 0's rows about the database, the group's own.
    lines.splice(Math.max(1, lines.findIndex((l) => l.startsWith('  Database:'))), 0, ...opts.bannerRows(members));
    opts.say(lines.join('\n'));
  }
  await allExited;
  return exitCode;
}
