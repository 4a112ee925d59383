import { Config, loadConfig, requireSettings } from '../config';
import { GatewayRoles, RunningGateway, startGateway } from './gateway';
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

const say = (line = '') => process.stdout.write(`${line}\n`);
const warn = (line: string) => process.stderr.write(`[gateway] ${line}\n`);

function banner(kind: ServiceKind, config: Config, gw: RunningGateway): string[] {
  const row = (label: string, value: string) => `  ${`${label}:`.padEnd(15)}${value}`;
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
  lines.push(row('Database', gw.database.description));
  if (gw.database.applied.length > 0) {
    lines.push(row('Migrations', `applied ${gw.database.applied.join(', ')}`));
  }
  lines.push(row('Temporal', `${gw.temporal.description}, task queue ${config.TEMPORAL_TASK_QUEUE}`));
  if (gw.secretFile) lines.push(row('Secret', `GATEWAY_SECRET from ${gw.secretFile}`));
  lines.push(row('Upstreams', gw.gatewayConfig));
  if (config.GATEWAY_CONFIG) lines.push(row('Reload', `kill -HUP ${process.pid} (re-reads GATEWAY_CONFIG)`));
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
 * Runs `start`, `api` or `worker` until SIGINT/SIGTERM, then stops everything it started in reverse order
 * and exits 0 (1 when a part failed). A failed start-up closes what it had started and rethrows.
 */
export async function runService(kind: ServiceKind): Promise<void> {
  const config = loadConfig();
  if (kind !== 'start') {
    requireSettings(
      config,
      ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'GATEWAY_SECRET'],
      `by \`gateway ${kind}\`, a production entry point without embedded defaults (\`npm start\` has them)`,
    );
  }
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

  let gw: RunningGateway;
  try {
    gw = await startGateway(config, ROLES[kind], resources, {
      log: warn,
      onFatal: (err) => {
        warn(err.message);
        stop(1, 'a part failed');
      },
    });
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
  say(banner(kind, config, gw).join('\n'));
}
