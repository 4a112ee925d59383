import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ensureTemporalCli } from './cli';

export interface DevServer {
  address: string;
  namespace: string;
  shutdown(): Promise<void>;
}

/**
 * A local `temporal server start-dev`, from the pinned CLI when it can be had (see ./cli), else from the
 * SDK's own download. With `dbFilename` its state survives restarts (SQLite).
 */
export async function startDevServer(
  opts: { dbFilename?: string; ui?: boolean; log?: (line: string) => void } = {},
): Promise<DevServer> {
  const cliPath = await ensureTemporalCli(opts.log);
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: cliPath ? { type: 'existing-path', path: cliPath } : { type: 'cached-download' },
      ...(opts.dbFilename ? { dbFilename: opts.dbFilename } : {}),
      ui: opts.ui ?? false,
      extraArgs: ['--log-level', 'error'],
    },
  });
  return {
    address: env.address,
    namespace: env.namespace ?? 'default',
    shutdown: () => env.teardown(),
  };
}
