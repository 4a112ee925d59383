import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { CONFIG_KEYS } from '../../src/config';

const ROOT = path.resolve(__dirname, '../..');

/** A compiled gateway process (`node dist/src/cli/main.js <command>`), as `npm start` and the containers run it. */
export interface GatewayChild {
  child: ChildProcess;
  /** Resolves with the first match of `pattern` in its output; rejects when it exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  output(): string;
  /** SIGTERM, then waits for the exit (SIGKILL after 30 s). */
  stop(): Promise<void>;
}

export function startGatewayProcess(command: 'start' | 'api' | 'worker', env: Record<string, string>, opts: { cpus?: string } = {}): GatewayChild {
  const base: Record<string, string | undefined> = { ...process.env };
  // The process sees only the configuration the scenario gives it.
  for (const name of CONFIG_KEYS) delete base[name];
  const argv = [process.execPath, '--max-semi-space-size=4', 'dist/src/cli/main.js', command];
  // taskset execs node in place: the child's pid is the gateway's.
  const [file, ...args] = opts.cpus ? ['taskset', '-c', opts.cpus, ...argv] : argv;
  const child = spawn(file, args, {
    cwd: ROOT,
    env: { ...base, LOG_LEVEL: 'warn', GATEWAY_PROCESSES: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  // Request log lines (LOG_LEVEL=info) are only counted past the start: the banner and warnings are what is read.
  const onData = (chunk: Buffer) => {
    if (text.length < 1 << 20) text += chunk.toString();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output: () => text,
    async waitFor(pattern, timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = text.match(pattern);
        if (m) return m;
        if (child.exitCode !== null) throw new Error(`gateway ${command} exited before printing ${pattern}:\n${text}`);
        if (Date.now() > deadline) throw new Error(`gateway ${command} did not print ${pattern} in ${timeoutMs} ms:\n${text}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
