import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { seededRandom } from '../../src/simulator/seeded-random';

/**
 * Sub-millisecond probes autocannon cannot give (it records whole milliseconds): one connection, requests one
 * after the other, each timed with hrtime; and the helpers of the pinned set-up (taskset, a simulator in its
 * own process, a process's resident memory).
 */

export interface Quantiles {
  p50: number;
  p99: number;
  max: number;
  mean: number;
  n: number;
}

export function quantiles(samples: number[]): Quantiles {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1], mean: s.reduce((a, b) => a + b, 0) / s.length, n: s.length };
}

export const ms = (v: number) => `${v.toFixed(2)} ms`;

export interface ProbeTarget {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Default POST; a GET sends no body. */
  method?: 'GET' | 'POST';
  /** Time to the first body bytes (a stream's first chunk) instead of to the whole answer. */
  firstByte?: boolean;
}

/** One timed request: milliseconds (hrtime) and the answer's Server-Timing header, if any. */
export interface ProbeSample {
  ms: number;
  serverTiming?: string;
}

/** One keep-alive connection to a target and a function timing one request on it; every answer must be 200. */
function probeConnection(t: ProbeTarget): { one(): Promise<ProbeSample>; close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const u = new URL(t.url);
  const one = () =>
    new Promise<ProbeSample>((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      let first: bigint | null = null;
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname + u.search,
          method: t.method ?? 'POST',
          agent,
          headers: t.method === 'GET' ? t.headers : { ...t.headers, 'content-length': Buffer.byteLength(t.body) },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`${t.url} answered ${res.statusCode}`));
          res.on('data', () => {
            first ??= process.hrtime.bigint();
          });
          res.on('end', () => {
            const ms = Number(((t.firstByte ? first ?? process.hrtime.bigint() : process.hrtime.bigint()) - t0)) / 1e6;
            const timing = res.headers['server-timing'];
            resolve(typeof timing === 'string' ? { ms, serverTiming: timing } : { ms });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(t.body);
    });
  return { one, close: () => agent.destroy() };
}

/** `count` requests over one keep-alive connection, one at a time, after `warmup` untimed ones. */
export async function sequentialProbe(opts: ProbeTarget & { count: number; warmup: number }): Promise<Quantiles> {
  const conn = probeConnection(opts);
  try {
    for (let i = 0; i < opts.warmup; i++) await conn.one();
    const samples: number[] = [];
    for (let i = 0; i < opts.count; i++) samples.push((await conn.one()).ms);
    return quantiles(samples);
  } finally {
    conn.close();
  }
}

/** The pause between two blocks of alternatedProbe: longer than the group commit lets a settle wait (20 ms). */
const BLOCK_GAP_MS = 25;

/**
 * Targets (the upstream called directly, the gateway, the floor proxy) called in turn, each on its own keep-alive
 * connection, after `warmup` untimed rounds: every target's samples see the same moments of a shared machine, so
 * the differences between them are what each adds, not what the machine did in between two runs. Each round calls
 * them in a new order (a seeded shuffle, the same every run): a call pays for what the one before it left behind (a
 * process that writes its settle after answering, a core woken from idle by the first call that lands on it), and in
 * a fixed order one target would always follow the same neighbour.
 *
 * `block` (default 1) is how many calls a target gets in a row within a round, every one of them timed. With 1,
 * every call follows another process's call on the same core and starts with its code and data out of the caches.
 * With more, the process runs as it does in service, alone on its core between its own calls. Between two blocks
 * the probe waits `BLOCK_GAP_MS`: what a process does after its block (a batch of settles it let wait up to 20 ms
 * for company) then lands in that gap, not in the next target's calls. Returns each target's quantiles and
 * samples, in the order given.
 */
export async function alternatedProbe(
  targets: ProbeTarget[],
  opts: { count: number; warmup: number; block?: number },
): Promise<Array<{ q: Quantiles; samples: ProbeSample[] }>> {
  const conns = targets.map(probeConnection);
  const block = Math.max(1, opts.block ?? 1);
  try {
    const order = conns.map((_, i) => i);
    const random = seededRandom(0x5eed);
    for (let i = 0; i < opts.warmup; i++) for (const t of shuffle(order, random)) await conns[t].one();
    const samples: ProbeSample[][] = conns.map(() => []);
    for (let i = 0; i < opts.count; i += block) {
      for (const t of shuffle(order, random)) {
        if (block > 1) await new Promise((resolve) => setTimeout(resolve, BLOCK_GAP_MS));
        for (let k = 0; k < Math.min(block, opts.count - i); k++) samples[t].push(await conns[t].one());
      }
    }
    return samples.map((s) => ({ q: quantiles(s.map((x) => x.ms)), samples: s }));
  } finally {
    for (const c of conns) c.close();
  }
}

/** Fisher-Yates, in place; returns the array. */
function shuffle(xs: number[], random: () => number): number[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

/** Where a relayed call's time went: its Server-Timing parts and what the client saw outside them. */
export interface CallBreakdown {
  upstream: number;
  billing: number;
  gateway: number;
  /** Client-observed time not in the header: loopback, the client's and the gateway's wake-ups, writing the answer. */
  outside: number;
}

function breakdownOf(s: ProbeSample): CallBreakdown | null {
  if (!s.serverTiming) return null;
  const dur = (name: string) => Number(new RegExp(`(?:^|,\\s*)${name};dur=([0-9.]+)`).exec(s.serverTiming!)?.[1] ?? 0);
  const upstream = dur('upstream');
  const billing = dur('billing');
  const gateway = dur('gateway');
  return { upstream, billing, gateway, outside: Math.max(0, s.ms - upstream - billing - gateway) };
}

/** A breakdown as the reports print it. */
export function describeBreakdown(b: CallBreakdown): string {
  return `upstream ${ms(b.upstream)}, billing ${ms(b.billing)}, gateway ${ms(b.gateway)}, between the processes ${ms(b.outside)}`;
}

/**
 * The typical call (medians of each part) and the slowest `share` of the calls (means of each part): which part
 * makes a tail. Null when the answers carried no Server-Timing.
 */
export function tailBreakdown(samples: ProbeSample[], share = 0.01): { median: CallBreakdown; slowest: CallBreakdown; n: number } | null {
  const parts = samples.map((s) => ({ s, b: breakdownOf(s) })).filter((x): x is { s: ProbeSample; b: CallBreakdown } => x.b !== null);
  if (parts.length === 0) return null;
  const keys = ['upstream', 'billing', 'gateway', 'outside'] as const;
  const median = Object.fromEntries(keys.map((k) => [k, quantiles(parts.map((x) => x.b[k])).p50])) as unknown as CallBreakdown;
  const slow = [...parts].sort((x, y) => y.s.ms - x.s.ms).slice(0, Math.max(1, Math.round(parts.length * share)));
  const slowest = Object.fromEntries(keys.map((k) => [k, slow.reduce((a, x) => a + x.b[k], 0) / slow.length])) as unknown as CallBreakdown;
  return { median, slowest, n: slow.length };
}

/** Resident memory of a process now and at its peak, in MiB (Linux /proc). */
export function rssMiB(pid: number): { now: number; peak: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024;
    return { now: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return null;
  }
}

/** Pins a running process (all its threads) to `cpus`; false when taskset is missing or not allowed. */
export function pin(pid: number, cpus: string): boolean {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A child process (on `cpus` when given) that prints `listening on <url>` once it serves; resolves with that URL. */
async function startListeningChild(
  what: string,
  args: string[],
  cpus: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const child: ChildProcess = cpus
    ? spawn('taskset', ['-c', cpus, process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env })
    : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within 30 s`)), 30_000);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`${what} exited with ${code}`)));
  });
  return {
    url,
    pid: child.pid as number,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The upstream simulator in its own process (on `cpus` when given); resolves with its base URL. */
export function startSimulatorProcess(cpus?: string, args: string[] = []): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const main = path.join(__dirname, '..', '..', 'src', 'simulator', 'main.ts');
  return startListeningChild('simulator', ['--import', 'tsx', main, '--port', '0', ...args], cpus);
}

/** bench/floor-proxy.ts, compiled as the gateway runs (dist/), in its own process; resolves with its base URL. */
export function startFloorProxy(opts: {
  upstream: string;
  databaseUrl: string;
  tokenId: number;
  accountId: number;
  cpus?: string;
  /** Append each settle to this file before the answer, and settle after it (bench/floor-proxy.ts). */
  journal?: string;
  /** Insert the ledger row alone before the answer, move the counters after it (bench/floor-proxy.ts). */
  ledgerFirst?: boolean;
  /** Behind Fastify (its JSON body parser and reply, nothing else): the stack's own floor (bench/floor-proxy.ts). */
  fastify?: boolean;
}): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const main = path.join(__dirname, '..', '..', 'dist', 'bench', 'floor-proxy.js');
  const env = {
    ...process.env, FLOOR_UPSTREAM: opts.upstream, DATABASE_URL: opts.databaseUrl, FLOOR_TOKEN: String(opts.tokenId), FLOOR_ACCOUNT: String(opts.accountId),
    ...(opts.journal ? { FLOOR_JOURNAL: opts.journal } : {}),
    ...(opts.ledgerFirst ? { FLOOR_LEDGER_FIRST: '1' } : {}),
    ...(opts.fastify ? { FLOOR_FASTIFY: '1' } : {}),
  };
  return startListeningChild('floor proxy', [main], opts.cpus, env);
}

/** A JSON call (management or inference) with an Authorization header; the status and the parsed body. */
export async function callJson(base: string, method: string, url: string, auth: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

/**
 * Times `fn` one call after another, `pauseMs` apart, until `stop()` says so; every call must succeed. `fn` may
 * return the answer's Server-Timing header, kept with its sample (for tailBreakdown).
 */
export async function sampleLoop(fn: () => Promise<string | undefined | void>, stop: () => boolean, pauseMs = 0): Promise<ProbeSample[]> {
  const samples: ProbeSample[] = [];
  while (!stop()) {
    const t0 = performance.now();
    const serverTiming = (await fn()) ?? undefined;
    samples.push({ ms: performance.now() - t0, serverTiming });
    if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
  }
  return samples;
}

/** sampleLoop's milliseconds alone. */
export async function timeLoop(fn: () => Promise<unknown>, stop: () => boolean, pauseMs = 0): Promise<number[]> {
  return (await sampleLoop(async () => void (await fn()), stop, pauseMs)).map((s) => s.ms);
}
