import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { TEST_SECRET, testEnv } from './harness';

export interface WorkerProcess {
  child: ChildProcess;
  /** Sends the signal and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const ROOT = path.resolve(__dirname, '..', '..');

/** Starts test/helpers/worker-main.ts as a separate process on the test database and Temporal server. */
export async function spawnWorkerProcess(opts: {
  taskQueue: string;
  /** application_name of the worker's database connections. */
  appName?: string;
  readyTimeoutMs?: number;
  /** Further environment (WORKER_GATEWAY_CONFIG and the variables it names). */
  env?: Record<string, string>;
}): Promise<WorkerProcess> {
  const env = testEnv();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/helpers/worker-main.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      GATEWAY_TEST_DATABASE_URL: env.databaseUrl,
      GATEWAY_TEST_TEMPORAL_ADDRESS: env.temporalAddress,
      GATEWAY_TEST_TEMPORAL_NAMESPACE: env.temporalNamespace,
      GATEWAY_TEST_WORKFLOW_BUNDLE: env.workflowBundle,
      WORKER_TASK_QUEUE: opts.taskQueue,
      WORKER_SECRET: TEST_SECRET,
      WORKER_APP_NAME: opts.appName ?? 'gateway-test-worker',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker process not ready after ${opts.readyTimeoutMs ?? 60_000} ms: ${stderr}`)), opts.readyTimeoutMs ?? 60_000);
    child.stdout!.on('data', (d) => {
      if (d.toString().includes('worker ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker process exited with ${code} before it was ready: ${stderr}`));
    });
  });
  return {
    child,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
