import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CONFIG_KEYS } from '../../src/config';

const ROOT = path.resolve(__dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

const tempDirs: string[] = [];

/** A fresh DATA_DIR; removeTempDataDirs() deletes every one this test file made. */
export function tempDataDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-data-'));
  tempDirs.push(dir);
  return dir;
}

export function removeTempDataDirs(): void {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export interface GatewayProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first match of `pattern` in stdout+stderr; rejects on exit or timeout. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `gateway <args>` the way `npm run gateway` does (through tsx), with a clean gateway environment. */
export function runGateway(args: string[], env: Record<string, string | undefined> = {}): GatewayProcess {
  const base: Record<string, string | undefined> = { ...process.env };
  // A spawned gateway sees only the configuration a test gives it.
  for (const name of CONFIG_KEYS) delete base[name];
  const child = spawn(TSX, ['src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { ...base, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      resolve({ code, signal });
      for (const l of listeners) l();
    });
  });
  let done = false;
  exited.then(() => (done = true));

  return {
    child,
    output: () => text,
    exited,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`timed out waiting for ${pattern}; output:\n${text}`)), timeoutMs);
        const check = () => {
          const m = text.match(pattern);
          if (m) finish(null, m);
          else if (done) finish(new Error(`exited before printing ${pattern}; output:\n${text}`));
        };
        function finish(err: Error | null, m?: RegExpMatchArray) {
          clearTimeout(timer);
          listeners.delete(check);
          if (err) reject(err);
          else resolve(m!);
        }
        listeners.add(check);
        check();
      });
    },
  };
}

/** Resolves with the exit status, or rejects when the process is still alive after `timeoutMs`. */
export async function exitWithin(p: GatewayProcess, timeoutMs: number) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      p.child.kill('SIGKILL');
      reject(new Error(`still running ${timeoutMs} ms after the signal; output:\n${p.output()}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([p.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** True when something accepts TCP connections on host:port. */
export function listening(address: string): Promise<boolean> {
  const [host, port] = address.split(':');
  return new Promise((resolve) => {
    const socket = net.connect({ host, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
