import { ChildProcess, fork } from 'node:child_process';

/**
 * Forks `file` (a scenario module) as a worker process: the scenario runs its worker main when it sees `role` set
 * in its environment, and reports `{type:'ready'}` over IPC.
 */
export async function forkWorker(file: string, role: string, env: Record<string, string>): Promise<ChildProcess> {
  const child = fork(file, [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...env, [role]: '1' },
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('bench worker not ready within 120 s')), 120_000);
    child.once('exit', (code) => reject(new Error(`bench worker exited with ${code}`)));
    child.on('message', (m: { type?: string }) => {
      if (m?.type === 'ready') {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return child;
}

/** SIGTERM, then SIGKILL after 15 s; resolves once the process has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}
