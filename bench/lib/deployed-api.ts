import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startDevServer } from '../../src/temporal/dev-server';
import { startGatewayProcess, type GatewayChild } from './gateway-process';

/** The CPU seconds a process has used so far (user + system; Linux /proc). */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    // After the command: state is field 3 of stat(5), so utime (14) and stime (15) are at 11 and 12 here.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** The children of a process (a group's members), by pgrep. */
export function childPids(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export interface DeployedApi {
  baseUrl: string;
  /** The process started (one api, or a group's primary). */
  pid: number;
  /** Every process that serves: the api itself, or the group's members. */
  servingPids(): number[];
  /** CPU seconds of the api (a group: its primary and members) so far. */
  cpuSeconds(): number;
  child: GatewayChild;
  stop(): Promise<void>;
}

/**
 * `gateway api` as deployed: the compiled CLI (`node dist/src/cli/main.js api`), its own settings from the
 * environment (LOG_LEVEL=info, as production runs it, request log lines going to the child's pipe), a Temporal dev
 * server of its own for the client it connects at start, on `cpus` when given (taskset), with `processes` processes.
 */
export async function startDeployedApi(opts: {
  databaseUrl: string;
  secret: string;
  dataDir: string;
  env: Record<string, string>;
  processes: number;
  cpus?: string;
  log(line: string): void;
}): Promise<DeployedApi> {
  const temporal = await startDevServer({ log: opts.log });
  const child = startGatewayProcess(
    'api',
    {
      DATABASE_URL: opts.databaseUrl,
      GATEWAY_SECRET: opts.secret,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      DATA_DIR: opts.dataDir,
      PORT: '0',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      GATEWAY_PROCESSES: String(opts.processes),
      ...opts.env,
    },
    { cpus: opts.cpus },
  );
  try {
    const baseUrl = (await child.waitFor(/^ {2}Base URL:\s+(\S+)$/m))[1];
    await child.waitFor(/Press Ctrl-C/);
    const pid = child.child.pid!;
    const servingPids = () => (opts.processes > 1 ? childPids(pid) : [pid]);
    return {
      baseUrl,
      pid,
      servingPids,
      cpuSeconds: () => [pid, ...(opts.processes > 1 ? childPids(pid) : [])].reduce((s, p) => s + cpuSeconds(p), 0),
      child,
      async stop() {
        await child.stop();
        await temporal.shutdown();
      },
    };
  } catch (err) {
    await child.stop();
    await temporal.shutdown();
    throw err;
  }
}
