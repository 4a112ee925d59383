import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type { InferenceBatchStarter } from '../domain/batches/batch-service';
import type { inferenceBatchWorkflow, InferenceBatchInput } from '../workflows/inference-batch';

export const inferenceBatchWorkflowId = (batchId: string) => `batch:${batchId}`;

/** The batch service's port onto Temporal: workflow batch:<id>, started at most once. */
export function createTemporalInferenceBatchStarter(
  temporal: { client: Client; taskQueue: string },
  opts: Pick<InferenceBatchInput, 'webhookRetry' | 'heartbeatTimeoutMs'> = {},
): InferenceBatchStarter {
  return {
    async start(batchId, { prepared }) {
      try {
        await temporal.client.workflow.start<typeof inferenceBatchWorkflow>('inferenceBatchWorkflow', {
          workflowId: inferenceBatchWorkflowId(batchId),
          taskQueue: temporal.taskQueue,
          args: [{ batchId, prepared, ...opts }],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    },
  };
}
