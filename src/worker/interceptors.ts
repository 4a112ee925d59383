import { CompleteAsyncError, type Context as ActivityContext } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, InjectedSinks, Next, WorkerOptions } from '@temporalio/worker';
import type { GatewayMetrics } from '../observability/metrics';
import { asActivityFailure } from './permanent-faults';
import type { Tracing } from '../tracing';
import type { GatewayMetricsSinks } from '../workflows/interceptors';

/** Workflow interceptor modules every bundle carries (failure counts); tracing adds Temporal's OpenTelemetry one. */
export const WORKFLOW_INTERCEPTOR_MODULES = [require.resolve('../workflows/interceptors')];
export const TRACING_WORKFLOW_INTERCEPTOR_MODULE = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

function failureKind(err: unknown): string {
  if (err instanceof CancelledFailure || (err as { name?: string })?.name === 'CancelledFailure') return 'cancelled';
  if (err instanceof TimeoutFailure) return 'timeout';
  if (err instanceof ApplicationFailure && err.nonRetryable) return 'non_retryable';
  return 'retryable';
}

/** Every activity's failure: a permanent fault made non-retryable (permanent-faults.ts), then counted. */
class ActivityFailureInbound implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: ActivityContext, private readonly metrics: GatewayMetrics | undefined) {}
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } catch (caught) {
      // Completed asynchronously (a parked run): not a failure.
      if (caught instanceof CompleteAsyncError) throw caught;
      const err = asActivityFailure(caught);
      this.metrics?.activityFailures.inc({ activity: this.ctx.info.activityType, kind: failureKind(err) });
      throw err;
    }
  }
}

/**
 * The worker's interceptors and sinks: activity and workflow failure counts into `metrics`, and when tracing is
 * on, Temporal's OpenTelemetry interceptors (activity spans, workflow spans through the exporter sink) so the
 * trace a request started carries on through the workflow.
 */
export async function workerInstrumentation(opts: { metrics?: GatewayMetrics; tracing?: Tracing | null }): Promise<Pick<WorkerOptions, 'interceptors' | 'sinks'>> {
  const { metrics, tracing } = opts;
  const activity: NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']> = [];
  const workflowModules = [...WORKFLOW_INTERCEPTOR_MODULES];
  const sinks: InjectedSinks<GatewayMetricsSinks> & Record<string, unknown> = {
    gatewayMetrics: {
      workflowFailed: { fn: (info, kind) => metrics?.workflowFailures.inc({ workflow: info.workflowType, kind }) },
    },
  };
  activity.push((ctx) => ({ inbound: new ActivityFailureInbound(ctx, metrics) }));
  if (tracing) {
    const otel = await import('@temporalio/interceptors-opentelemetry');
    activity.push((ctx) => ({ inbound: new otel.OpenTelemetryActivityInboundInterceptor(ctx), outbound: new otel.OpenTelemetryActivityOutboundInterceptor(ctx) }));
    workflowModules.push(TRACING_WORKFLOW_INTERCEPTOR_MODULE);
    sinks.exporter = otel.makeWorkflowExporter(tracing.spanProcessor, tracing.resource);
  }
  return { interceptors: { activity, workflowModules }, sinks: sinks as WorkerOptions['sinks'] };
}
