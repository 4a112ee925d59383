import { ContinueAsNew, isCancellation, proxySinks, TemporalFailure, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

// Counts workflow executions that end in failure, through a sink (sinks run outside the sandbox, once, never
// during replay): gateway_workflow_failures_total{workflow, kind} in src/observability/metrics.ts.

export type WorkflowFailureKind = 'failed' | 'cancelled' | 'task_failed';

export interface GatewayMetricsSinks extends Sinks {
  gatewayMetrics: { workflowFailed(kind: WorkflowFailureKind): void };
}

const { gatewayMetrics } = proxySinks<GatewayMetricsSinks>();

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      async execute(input, next) {
        try {
          return await next(input);
        } catch (err) {
          if (!(err instanceof ContinueAsNew)) {
            // A TemporalFailure fails the execution; anything else (a bug) fails the workflow task, which is retried.
            gatewayMetrics.workflowFailed(isCancellation(err) ? 'cancelled' : err instanceof TemporalFailure ? 'failed' : 'task_failed');
          }
          throw err;
        }
      },
    },
  ],
});
