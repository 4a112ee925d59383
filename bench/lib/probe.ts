import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

/**
 * Sub-millisecond probes autocannon cannot give (it records whole milliseconds): one connection, requests one
 * after the other, each timed with hrtime; and the helpers of the pinned set-up (taskset, a simulator in its
 * own process, a process's resident memory).
 */

export interface Quantiles {
  p50: number;
  p99: number;
  mean: number;
  n: number;
}

function quantiles(samples: number[]): Quantiles {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50: at(0.5), p99: at(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length, n: s.length };
}

export const ms = (v: number) => `${v.toFixed(2)} ms`;

/**
 * `count` requests over one keep-alive connection, one at a time. `firstByte`: the time to the first body bytes
 * (a stream's first chunk) instead of to the whole answer. Every answer must be 200.
 */
export async function sequentialProbe(opts: {
  url: string;
  headers: Record<string, string>;
  body: string;
  count: number;
  warmup: number;
  firstByte?: boolean;
  /** Default POST; a GET sends no body. */
  method?: 'GET' | 'POST';
}): Promise<Quantiles> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const u = new URL(opts.url);
  const one = () =>
    new Promise<number>((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      let first: bigint | null = null;
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname + u.search,
          method: opts.method ?? 'POST',
          agent,
          headers: opts.method === 'GET' ? opts.headers : { ...opts.headers, 'content-length': Buffer.byteLength(opts.body) },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`${opts.url} answered ${res.statusCode}`));
          res.on('data', () => {
            first ??= process.hrtime.bigint();
          });
          res.on('end', () => resolve(Number(((opts.firstByte ? first ?? process.hrtime.bigint() : process.hrtime.bigint()) - t0)) / 1e6));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(opts.body);
    });
  try {
    for (let i = 0; i < opts.warmup; i++) await one();
    const samples: number[] = [];
    for (let i = 0; i < opts.count; i++) samples.push(await one());
    return quantiles(samples);
  } finally {
    agent.destroy();
  }
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

/** The upstream simulator in its own process (on `cpus` when given); resolves with its base URL. */
export async function startSimulatorProcess(cpus?: string): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const main = path.join(__dirname, '..', '..', 'src', 'upstream', 'simulator', 'main.ts');
  const args = ['--import', 'tsx', main, '--port', '0'];
  const child: ChildProcess = cpus
    ? spawn('taskset', ['-c', cpus, process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('simulator did not start within 30 s')), 30_000);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
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
