import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { batchWorkflowId } from '../domain/keys/batch-plan';
import { BatchWorkflowConflictError, BatchWorkflowStarter } from '../domain/keys/batches';
import type { keysIssueWorkflow, keysRotateWorkflow, keysStatusWorkflow } from '../workflows/keys-batch';

const WORKFLOW_TYPE = {
  issue: 'keysIssueWorkflow',
  status: 'keysStatusWorkflow',
  rotate: 'keysRotateWorkflow',
} as const;

type BatchWorkflow = typeof keysIssueWorkflow | typeof keysStatusWorkflow | typeof keysRotateWorkflow;

/** The batch service's port onto Temporal: workflow keys:<batch id>, started at most once. */
export function createTemporalBatchStarter(temporal: { client: Client; taskQueue: string }): BatchWorkflowStarter {
  const { client, taskQueue } = temporal;
  return {
    async start(plan, owner) {
      const { kind, ...input } = plan;
      const workflowId = batchWorkflowId(plan.batchId);
      try {
        await client.workflow.start<BatchWorkflow>(WORKFLOW_TYPE[kind], {
          workflowId,
          taskQueue,
          args: [input as never],
          // A batch id is used once, ever: a finished batch is never run again under the same id.
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          memo: { batchOwner: owner },
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        // Started before (a replayed request, or a retry after a crash): fine if it is this batch's run.
        const desc = await client.workflow.getHandle(workflowId).describe();
        if (desc.memo?.batchOwner !== owner) {
          throw new BatchWorkflowConflictError(
            `workflow ${workflowId} exists but belongs to another batch (was the database reset while Temporal kept its history?)`,
          );
        }
      }
    },

    async cancel(batchId) {
      try {
        await client.workflow.getHandle(batchWorkflowId(batchId)).cancel();
        return true;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      }
    },
  };
}
