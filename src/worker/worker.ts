import { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import { ActivityDeps, createActivities } from '../activities';
import type { GatewayMetrics } from '../observability/metrics';
import type { Tracing } from '../tracing';
import { workerInstrumentation } from './interceptors';
import { prebuiltWorkflowBundle } from './workflow-bundle';

export const WORKFLOWS_PATH = require.resolve('../workflows');
export { WORKFLOW_INTERCEPTOR_MODULES } from './interceptors';

export interface GatewayWorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /**
   * A pre-built bundle (tests build one and share it); otherwise the build's dist/workflow-bundle.js when running
   * compiled without tracing, else the workflows are bundled at start. A pre-built bundle carries the workflow
   * interceptors it was built with (bundleWorkflowCode's workflowInterceptorModules).
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Activity and workflow failure counts go here (gateway_activity_failures_total, gateway_workflow_failures_total). */
  metrics?: GatewayMetrics;
  /** Started tracing: activity and workflow spans join the trace of the request that started the workflow. */
  tracing?: Tracing | null;
  /** Further Worker options (concurrency, sticky-queue timeouts); the ones above win. */
  workerOptions?: Partial<Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue' | 'activities'>>;
}

export async function createGatewayWorker(opts: GatewayWorkerOptions): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: opts.address });
  const instrumentation = await workerInstrumentation({ metrics: opts.metrics, tracing: opts.tracing });
  // The build's bundle carries the default interceptor modules only: tracing adds one, so a traced worker bundles.
  const workflowBundle = opts.workflowBundle ?? (opts.tracing ? undefined : prebuiltWorkflowBundle());
  const worker = await Worker.create({
    // Lets a chunk in flight at SIGTERM finish instead of being redone by another worker.
    shutdownGraceTime: '10 seconds',
    // A video task waits in one activity for minutes, mostly asleep: thousands in flight cost timers, not threads.
    maxConcurrentActivityTaskExecutions: 10_000,
    // A cached workflow costs about half a MiB; a video workflow needs its cache twice in its life (start, end), so
    // a small cache costs a replay of about 14 events per task where a large one costs hundreds of MiB.
    maxCachedWorkflows: 100,
    ...opts.workerOptions,
    sinks: instrumentation.sinks,
    // A pre-built bundle carries its interceptor modules; the SDK warns when given them again.
    interceptors: workflowBundle ? { ...instrumentation.interceptors, workflowModules: undefined } : instrumentation.interceptors,
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: createActivities(opts.deps),
    ...(workflowBundle ? { workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
  });
  return { worker, connection };
}
