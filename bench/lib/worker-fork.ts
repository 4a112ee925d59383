import { ChildProcess, fork } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** The compiled twin of a source file under dist/ when it is at least as new (the set-up script builds it). */
function compiled(file: string): string | null {
  const js = path.join(ROOT, 'dist', path.relative(ROOT, file)).replace(/\.ts$/, '.js');
  return file.endsWith('.ts') && existsSync(js) && statSync(js).mtimeMs >= statSync(file).mtimeMs ? js : null;
}

/**
 * Forks `file` (a scenario module) as a worker process: the scenario runs its worker main when it sees `role` set
 * in its environment, and reports `{type:'ready'}` over IPC. It runs compiled, as `gateway worker` does, when
 * dist/ is current (its memory is then the worker's, not the TypeScript loader's); else through tsx.
 */
export async function forkWorker(file: string, role: string, env: Record<string, string>): Promise<ChildProcess> {
  const js = compiled(file);
  const child = fork(js ?? file, [], {
    execArgv: [
      ...(js ? ['--max-semi-space-size=4'] : ['--import', 'tsx']),
      // BENCH_CPU_PROF=<dir>: a CPU profile of the worker too, as bench/lib/server-process.ts takes of the api.
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    ],
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
