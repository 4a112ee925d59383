import { TestWorkflowEnvironment } from '@temporalio/testing';
import path from 'node:path';
import { cacheRoot, ensureTemporalCli } from './cli';

export interface DevServer {
  address: string;
  namespace: string;
  shutdown(): Promise<void>;
}

/**
 * A local `temporal server start-dev`, from the pinned CLI when it can be had (see ./cli), else from the
 * SDK's own download (kept in the same per-user cache). With `dbFilename` its state survives restarts (SQLite).
 */
export async function startDevServer(
  opts: { dbFilename?: string; namespace?: string; ui?: boolean; log?: (line: string) => void } = {},
): Promise<DevServer> {
  const cliPath = await ensureTemporalCli(opts.log);
  if (!cliPath) opts.log?.('No Temporal CLI and no Go: using the dev server the Temporal SDK downloads (needs internet once).');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: cliPath
        ? { type: 'existing-path', path: cliPath }
        : { type: 'cached-download', downloadDir: path.join(cacheRoot(), 'temporal-sdk-download'), ttl: '30d' },
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
