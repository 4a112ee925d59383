import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CONFIG_KEYS } from '../../src/config';

const ROOT = path.resolve(__dirname, '../..');
// tsx's loader in the gateway's own process, not the `tsx` CLI: that CLI runs the script in a child and, on SIGTERM,
// kills it with SIGKILL and exits 143 when the child does not acknowledge the signal within 30 ms (a busy machine).
const TSX_LOADER = ['--import', 'tsx'];

/**
 * The bootstrap token of every gateway spawned on the run's shared PostgreSQL database: each start makes its
 * GATEWAY_BOOTSTRAP_TOKEN the admin's system token, so tests running at once with tokens of their own would take
 * the admin from each other.
 */
export const SHARED_DATABASE_BOOTSTRAP_TOKEN = 'shared-database-bootstrap-token-4f0c2d7e9a1b';

let distChecked = false;
/** dist/ as `npm test`'s pretest leaves it: rebuilt here only when a source is newer (a jest run started by hand). */
function ensureDist(): void {
  if (distChecked) return;
  distChecked = true;
  execFileSync('bash', ['-c', 'if [ ! -f dist/.built ] || [ -n "$(find src console -newer dist/.built -print -quit)" ]; then node scripts/build.mjs; fi'], { cwd: ROOT, stdio: 'ignore' });
}

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

export interface RunOptions {
  /** Start the process under this umask (through `bash -c 'umask ...; exec ...'`), e.g. 0o000. */
  umask?: number;
  /**
   * Sent through a shell pipe (`cat | gateway ...`) to the process's standard input, which is then closed
   * (default: no standard input).
   */
  stdin?: string;
  /**
   * Run on a pseudo-terminal (util-linux `script`), as a person at a terminal would: `child.stdin` stays open
   * for typing (end lines with \r), and stdout carries everything the terminal shows.
   */
  tty?: boolean;
  /** Start it as the leader of a process group of its own, so a test can signal the whole group (`-pid`). */
  detached?: boolean;
  /**
   * Run the sources through tsx's loader instead of the compiled gateway (`node dist/src/cli/main.js`), which is the
   * default: `npm start` runs dist/, and it starts in a third of the time (tsx compiles every module on each start).
   */
  sources?: boolean;
}

const shellQuote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

/** True when `script` (util-linux) can give a test a pseudo-terminal. */
export function canRunOnTty(): boolean {
  return spawnSync('script', ['--version']).status === 0;
}

/** Runs `gateway <args>` the way `npm run gateway` does (the compiled gateway), with a clean gateway environment. */
export function runGateway(args: string[], env: Record<string, string | undefined> = {}, opts: RunOptions = {}): GatewayProcess {
  const base: Record<string, string | undefined> = { ...process.env };
  // A spawned gateway sees only the configuration a test gives it.
  for (const name of CONFIG_KEYS) delete base[name];
  if (!opts.sources) ensureDist();
  let argv = opts.sources ? [process.execPath, ...TSX_LOADER, 'src/cli/main.ts', ...args] : [process.execPath, 'dist/src/cli/main.js', ...args];
  if (opts.umask !== undefined) argv = ['bash', '-c', `umask ${opts.umask.toString(8).padStart(3, '0')} && exec "$@"`, 'bash', ...argv];
  if (opts.stdin !== undefined) argv = ['bash', '-c', 'cat | exec "$@"', 'bash', ...argv];
  if (opts.tty) argv = ['script', '-qec', argv.map(shellQuote).join(' '), '/dev/null'];
  const [command, ...rest] = argv;
  const child = spawn(command, rest, {
    cwd: ROOT,
    env: { ...base, LOG_LEVEL: 'warn', GATEWAY_PROCESSES: '1', ...env },
    stdio: [opts.stdin === undefined && !opts.tty ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    detached: opts.detached === true,
  });
  if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
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

/**
 * Every entry under `root` (and `root` itself) that its group or others can read, write or enter, as
 * "<octal mode> <path relative to root>": what a private DATA_DIR must not have.
 */
export function openEntries(root: string): string[] {
  const open: string[] = [];
  const visit = (p: string) => {
    let st;
    try {
      st = lstatSync(p);
    } catch (err) {
      // A running server's short-lived files (temporal.sqlite-journal) may go between readdir and lstat.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && p !== root) return;
      throw err;
    }
    if ((st.mode & 0o077) !== 0) open.push(`${(st.mode & 0o777).toString(8)} ${path.relative(root, p) || '.'}`);
    if (st.isDirectory()) for (const name of readdirSync(p)) visit(path.join(p, name));
  };
  visit(root);
  return open;
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
