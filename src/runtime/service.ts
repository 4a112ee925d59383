import cluster from 'node:cluster';
import { Config, loadConfig, requireSettings } from '../config';
import type { GatewayRoles, RunningGateway } from './gateway';
import { bannerRow as row, mib } from './banner-row';
import { processCount } from './cores';
import { groupMembership, joinProcessGroup } from './group-member';
import { runGroupPrimary } from './group-primary';
import { tuneHeapGrowth, WORKER_HEAP_GROWING_PERCENT } from './heap';
import { Resources } from './resources';
import { installTemporalRuntime } from './temporal';

export type ServiceKind = 'start' | 'api' | 'worker';

const ROLES: Record<ServiceKind, GatewayRoles> = {
  start: { api: true, worker: true },
  api: { api: true, worker: false },
  worker: { api: false, worker: true },
};

/** A stuck clean-up must not keep a stopping process alive forever. */
const SHUTDOWN_TIMEOUT_MS = 30_000;

const membership = groupMembership();
/** A member of a group says which one it is on every line (request logs carry the pid already). */
const tag = membership ? `process ${membership.index} (pid ${process.pid}): ` : '';
const say = (line = '') => process.stdout.write(`${tag}${line}\n`);
const warn = (line: string) => process.stderr.write(`[gateway] ${tag}${line}\n`);

function banner(kind: ServiceKind, config: Config, gw: RunningGateway): string[] {
  const parts = kind === 'start' ? 'api + worker' : kind;
  const embedded = [gw.database.embedded && 'PostgreSQL', gw.temporal.devServer && 'Temporal'].filter(Boolean);
  const lines = [
    `AI gateway ${kind === 'worker' ? 'worker is running' : 'is ready'} (${parts}${embedded.length ? `, embedded ${embedded.join(' and ')}` : ''})`,
  ];
  if (gw.baseUrl) {
    lines.push(row('Base URL', gw.baseUrl));
    lines.push(row('Console', `${gw.baseUrl}/console`));
  }
  if (gw.metricsUrl) lines.push(row('Metrics', gw.metricsUrl));
  if (!membership && kind !== 'worker') {
    const why = gw.database.embedded ? 'the embedded database lives in this process' : 'GATEWAY_PROCESSES=1';
    lines.push(row('Processes', `1 (${why}), RSS ${mib(process.memoryUsage.rss())} MiB`));
  }
  lines.push(row('Database', gw.database.description));
  if (gw.database.applied.length > 0) {
    lines.push(row('Migrations', `applied ${gw.database.applied.join(', ')}`));
  }
  lines.push(row('Temporal', `${gw.temporal.description}, task queue ${config.TEMPORAL_TASK_QUEUE}`));
  if (gw.secretFile) lines.push(row('Secret', `GATEWAY_SECRET from ${gw.secretFile}`));
  lines.push(row('Upstreams', gw.gatewayConfig));
  // In a group, its primary: it passes the signal to every process.
  const reloadPid = membership ? process.ppid : process.pid;
  if (config.GATEWAY_CONFIG) lines.push(row('Reload', `kill -HUP ${reloadPid} (re-reads GATEWAY_CONFIG${membership ? ' in every process' : ''})`));
  const b = gw.bootstrap;
  if (b) {
    const fromEnv = config.GATEWAY_BOOTSTRAP_TOKEN !== undefined;
    lines.push(row('Account', `${b.username} (${b.created ? 'created now' : 'created at first start'})`));
    if (b.password) lines.push(row('Password', b.password));
    lines.push(
      row(
        'System token',
        fromEnv
          ? `the value of GATEWAY_BOOTSTRAP_TOKEN${b.systemTokenReplaced ? ' (set now)' : ''}`
          : (b.systemToken ?? 'printed at first start (set GATEWAY_BOOTSTRAP_TOKEN to choose a known one)'),
      ),
    );
    lines.push(row('API key', b.apiKey ?? 'printed at first start (list keys with GET /api/token/)'));
    lines.push('');
    lines.push('  Management: curl -H "Authorization: <system token>" ' + `${gw.baseUrl}/api/token/`);
    lines.push('  Inference:  curl -H "Authorization: Bearer <API key>" ' + `${gw.baseUrl}/v1/models`);
  }
  lines.push('', 'Press Ctrl-C (or send SIGTERM) to stop.');
  return lines;
}

/**
 * `gateway api`, and `gateway start` on PostgreSQL, with GATEWAY_PROCESSES (or --processes) above 1: this process
 * becomes the primary of a group that serves from that many processes. A member of a group runs its role.
 */
export async function runService(kind: ServiceKind): Promise<void> {
  const config = loadConfig();
  // The primary gives each member its role: `start` (api and worker) to process 0 of a `start` group, else `api`.
  if (membership) return runOneProcess(config, process.env.GATEWAY_PROCESS_ROLE === 'start' ? 'start' : 'api', membership.size);
  const count = kind === 'worker' ? 1 : processCount(config.GATEWAY_PROCESSES);
  if (kind !== 'worker' && count > 1 && cluster.isPrimary && (kind === 'api' || config.DATABASE_URL)) {
    if (kind !== 'start') requireProductionSettings(config, kind);
    process.exitCode = await runGroupPrimary(kind, config, count, { say, warn });
    return;
  }
  return runOneProcess(config, kind, null);
}

function requireProductionSettings(config: Config, kind: ServiceKind): void {
  requireSettings(
    config,
    ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'GATEWAY_SECRET'],
    `by \`gateway ${kind}\`, a production entry point without embedded defaults (\`npm start\` has them)`,
  );
}

/**
 * Runs `start`, `api` or `worker` until SIGINT/SIGTERM, then stops everything it started in reverse order
 * and exits 0 (1 when a part failed). A failed start-up closes what it had started and rethrows.
 */
async function runOneProcess(config: Config, kind: ServiceKind, groupSize: number | null): Promise<void> {
  if (kind !== 'start') requireProductionSettings(config, kind);
  if (kind !== 'api') await installTemporalRuntime(config.LOG_LEVEL);
  if (kind === 'worker') tuneHeapGrowth(WORKER_HEAP_GROWING_PERCENT);
  const resources = new Resources();

  let started = false;
  let pending: { code: number; reason: string } | null = null;
  let stopping = false;
  const stop = (code: number, reason: string) => {
    if (!started) {
      pending ??= { code, reason };
      return;
    }
    if (stopping) return;
    stopping = true;
    say(`Stopping (${reason})...`);
    setTimeout(() => {
      warn(`shutdown took longer than ${SHUTDOWN_TIMEOUT_MS / 1000} s; exiting anyway`);
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS).unref();
    void resources.closeAll(warn).then((ok) => {
      say(ok ? 'Stopped.' : 'Stopped, with errors.');
      process.exit(ok ? code : 1);
    });
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop(0, signal));
  let group: ReturnType<typeof joinProcessGroup> | null = null;
  if (groupSize !== null) {
    group = joinProcessGroup(groupSize);
    // The primary is gone (killed, say): nobody hands this process connections or stops it any more.
    process.on('disconnect', () => stop(0, 'the group\'s primary process is gone'));
  }

  let gw: RunningGateway;
  try {
    // Loaded here, not at the top: a group's primary serves nothing and carries none of it.
    const { startGateway } = await import('./gateway');
    gw = await startGateway(config, ROLES[kind], resources, {
      log: warn,
      onFatal: (err) => {
        warn(err.message);
        stop(1, 'a part failed');
      },
    }, group);
  } catch (err) {
    await resources.closeAll(warn);
    throw err;
  }
  started = true;
  if (pending) {
    const { code, reason } = pending;
    stop(code, reason);
    return;
  }
  if (group && membership) group.announceReady(membership.index, banner(kind, config, gw));
  else say(banner(kind, config, gw).join('\n'));
}
