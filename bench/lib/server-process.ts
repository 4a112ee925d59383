import { ChildProcess, fork } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';

export interface BenchServer {
  baseUrl: string;
  pid: number;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * Runs bench/server.ts in its own process (its own event loop and core), with stdout (the request log)
 * going to `logFile`. Resolves once it listens.
 */
export async function startBenchServer(opts: {
  databaseUrl: string;
  secret: string;
  logFile: string;
  logLevel?: string;
}): Promise<BenchServer> {
  const logFd = openSync(opts.logFile, 'w');
  const child: ChildProcess = fork(path.join(__dirname, '..', 'server.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', logFd, 'inherit', 'ipc'],
    env: {
      ...process.env,
      DATABASE_URL: opts.databaseUrl,
      GATEWAY_SECRET: opts.secret,
      LOG_LEVEL: opts.logLevel ?? 'info',
      NODE_ENV: 'production',
    },
  });
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
