import type { LogLevel as TemporalLogLevel } from '@temporalio/worker';
import type { Config, LogLevel } from '../config';
import { dataPaths, lockDataDir } from './data-dir';
import type { Resources } from './resources';

export interface TemporalTarget {
  address: string;
  namespace: string;
  devServer: boolean;
  description: string;
}

/**
 * The Temporal SDK's own log lines (worker state, bundling) go to stderr at WARN and above unless LOG_LEVEL asks
 * for debug or trace. The SDK's signal handlers are switched off: the gateway stops its workers itself, in order.
 */
export async function installTemporalRuntime(level: LogLevel): Promise<void> {
  // Loaded on demand: `gateway api` runs no worker and need not carry the worker SDK's native core.
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  const map: Record<LogLevel, TemporalLogLevel> = {
    fatal: 'ERROR', error: 'ERROR', warn: 'WARN', info: 'WARN', debug: 'DEBUG', trace: 'TRACE', silent: 'ERROR',
  };
  const logger = level === 'silent' ? new DefaultLogger('ERROR', () => undefined) : new DefaultLogger(map[level]);
  Runtime.install({ logger, shutdownSignals: [] });
}

/** TEMPORAL_ADDRESS when set; otherwise a `temporal server start-dev` child keeping its state in DATA_DIR. */
export async function openTemporal(config: Config, resources: Resources, log: (line: string) => void): Promise<TemporalTarget> {
  if (config.TEMPORAL_ADDRESS) {
    return {
      address: config.TEMPORAL_ADDRESS,
      namespace: config.TEMPORAL_NAMESPACE,
      devServer: false,
      description: `${config.TEMPORAL_ADDRESS}, namespace ${config.TEMPORAL_NAMESPACE}`,
    };
  }
  lockDataDir(config.DATA_DIR, resources);
  const dbFilename = dataPaths(config.DATA_DIR).temporal;
  const { startDevServer } = await import('../temporal/dev-server');
  const server = await startDevServer({ dbFilename, namespace: config.TEMPORAL_NAMESPACE, log });
  resources.add('the Temporal dev server', () => server.shutdown());
  return {
    address: server.address,
    namespace: server.namespace,
    devServer: true,
    description: `${server.address} (dev server, state in ${dbFilename})`,
  };
}
