import { ChildProcess, fork, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';

export interface BenchServer {
  baseUrl: string;
  pid: number;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * Runs bench/server.ts in its own process (its own event loop and core), compiled as `npm start` runs the gateway
 * (dist/, scripts/build.mjs, brought up to date by `npm run bench`'s set-up), with stdout (the request log) going to
 * `logFile`. Resolves once it listens.
 */
export async function startBenchServer(opts: {
  databaseUrl: string;
  secret: string;
  logFile: string;
  logLevel?: string;
  /** `taskset -c` CPU list the process runs on (e.g. '0'); default: any. */
  cpus?: string;
  /** More environment (e.g. GATEWAY_CONFIG). */
  env?: Record<string, string>;
  /** The project root whose compiled dist/bench/server.js runs (another commit's build); default this checkout. */
  root?: string;
}): Promise<BenchServer> {
  const logFd = openSync(opts.logFile, 'w');
  // BENCH_CPU_PROF=<dir>: the api process writes a V8 CPU profile there when it stops.
  // --max-semi-space-size=4: as the Dockerfile runs the gateway.
  // BENCH_NODE_ARGS: more node flags for the api process (e.g. heap settings to compare).
  const execArgv = ['--max-semi-space-size=4', ...(process.env.BENCH_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? []), ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [])];
  const env = {
    ...process.env,
    DATABASE_URL: opts.databaseUrl,
    GATEWAY_SECRET: opts.secret,
    LOG_LEVEL: opts.logLevel ?? 'info',
    NODE_ENV: 'production',
    ...opts.env,
  };
  const script = path.join(opts.root ?? path.join(__dirname, '..', '..'), 'dist', 'bench', 'server.js');
  const stdio: Array<'ignore' | 'inherit' | 'ipc' | number> = ['ignore', logFd, 'inherit', 'ipc'];
  // taskset execs node in place, so the IPC channel (an inherited fd named in the environment) still works.
  const child: ChildProcess = opts.cpus
    ? spawn('taskset', ['-c', opts.cpus, process.execPath, ...execArgv, script], { stdio, env })
    : fork(script, [], { execArgv, stdio, env });
  closeSync(logFd);

  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('bench server did not start within 60 s')), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bench server exited with code ${code} before listening`));
    });
    child.on('message', (msg: { type?: string; address?: string }) => {
      if (msg?.type === 'listening' && msg.address) {
        clearTimeout(timer);
        resolve(msg.address);
      }
    });
  });

  return {
    baseUrl,
    pid: child.pid as number,
    logFile: opts.logFile,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
