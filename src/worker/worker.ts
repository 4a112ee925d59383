import { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import { ActivityDeps, createActivities } from '../activities';

export const WORKFLOWS_PATH = require.resolve('../workflows');

export interface GatewayWorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** A pre-built bundle (tests build one and share it); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Further Worker options (concurrency, sticky-queue timeouts); the ones above win. */
  workerOptions?: Partial<Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue' | 'activities'>>;
}

export async function createGatewayWorker(opts: GatewayWorkerOptions): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: opts.address });
  const worker = await Worker.create({
    // Lets a chunk in flight at SIGTERM finish instead of being redone by another worker.
    shutdownGraceTime: '10 seconds',
    ...opts.workerOptions,
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: createActivities(opts.deps),
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
  });
  return { worker, connection };
}
