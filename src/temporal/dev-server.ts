import { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { cacheRoot, ensureTemporalCli } from './cli';

export interface DevServer {
  address: string;
  namespace: string;
  /** The server's process, when this code started it (the pinned CLI); benchmarks pin it to a core. */
  pid?: number;
  shutdown(): Promise<void>;
}

export interface DevServerOptions {
  dbFilename?: string;
  namespace?: string;
  ui?: boolean;
  log?: (line: string) => void;
  /** How long the server may take to answer its first gRPC call (default 60 s). */
  startTimeoutMs?: number;
}

/**
 * A local `temporal server start-dev`, from the pinned CLI when it can be had (see ./cli), else from the
 * SDK's own download (kept in the same per-user cache). With `dbFilename` its state survives restarts (SQLite).
 *
 * The pinned CLI is started here rather than through the SDK's ephemeral server, which gives a server five
 * seconds to answer: a cold binary on a busy machine (a CI run) can take longer, and that failed a CI run.
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const cliPath = await ensureTemporalCli(opts.log);
  if (cliPath) return startCliDevServer(cliPath, opts);
  opts.log?.('No Temporal CLI and no Go: using the dev server the Temporal SDK downloads (needs internet once).');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'cached-download', downloadDir: path.join(cacheRoot(), 'temporal-sdk-download'), ttl: '30d' },
      ...(opts.dbFilename ? { dbFilename: opts.dbFilename } : {}),
      ...(opts.namespace ? { namespace: opts.namespace } : {}),
      ui: opts.ui ?? false,
      extraArgs: ['--log-level', 'error'],
    },
  });
  return {
    address: env.address,
    namespace: env.namespace ?? opts.namespace ?? 'default',
    shutdown: () => env.teardown(),
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function devServerArgs(port: number, namespace: string, opts: DevServerOptions): string[] {
  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(port),
    '--namespace', namespace,
    '--log-format', 'pretty',
    '--log-level', 'error',
    '--dynamic-config-value', 'frontend.enableServerVersionCheck=false',
    '--dynamic-config-value', 'frontend.enableUpdateWorkflowExecution=true',
    '--dynamic-config-value', 'frontend.enableUpdateWorkflowExecutionAsyncAccepted=true',
  ];
  if (opts.dbFilename) args.push('--db-filename', opts.dbFilename);
  if (opts.ui) args.push('--ui-port', String(Math.min(port + 1000, 65535)));
  else args.push('--headless');
  return args;
}

async function startCliDevServer(cliPath: string, opts: DevServerOptions): Promise<DevServer> {
  const namespace = opts.namespace ?? 'default';
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  let lastError: unknown;
  // A port picked free can be taken before the server binds it; then the child exits and we try another.
  for (let attempt = 1; attempt <= 3 && Date.now() < deadline; attempt++) {
    const port = await freePort();
    const child = spawn(cliPath, devServerArgs(port, namespace, opts), { stdio: ['ignore', 'ignore', 'pipe'] });
    const stderr = tailOf(child);
    // A CLI that cannot be started (missing, not executable) ends like one that exited at once.
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', () => resolve(null));
    });
    const killOnExit = (): void => { child.kill('SIGKILL'); };
    process.once('exit', killOnExit);
    const address = `127.0.0.1:${port}`;
    try {
      await waitUntilServing(address, exited, deadline);
      return {
        address,
        namespace,
        pid: child.pid,
        shutdown: async () => {
          process.removeListener('exit', killOnExit);
          await stop(child, exited);
        },
      };
    } catch (err) {
      lastError = new Error(`${(err as Error).message}${stderr() ? `; its stderr: ${stderr()}` : ''}`);
      process.removeListener('exit', killOnExit);
      await stop(child, exited);
    }
  }
  throw new Error(`The Temporal dev server (${cliPath}) did not start: ${(lastError as Error)?.message ?? 'timed out'}`);
}

function tailOf(child: ChildProcess): () => string {
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => { tail = (tail + chunk.toString()).slice(-2000); });
  return () => tail.trim();
}

async function waitUntilServing(address: string, exited: Promise<number | null>, deadline: number): Promise<void> {
  let done = false;
  let exitCode: number | null | undefined;
  void exited.then((code) => { done = true; exitCode = code; });
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (done) throw new Error(`it exited with code ${exitCode}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`it did not answer at ${address} in time (${(lastError as Error)?.message ?? 'no answer'})`);
}

async function stop(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
