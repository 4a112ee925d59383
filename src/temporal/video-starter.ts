import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type { VideoWorkflowStarter } from '../domain/video/video-service';
import type { videoTaskWorkflow } from '../workflows/video-task';

export const videoWorkflowId = (taskId: string) => `video:${taskId}`;

/** The video service's port onto Temporal: workflow video:<task id>, started at most once. */
export function createTemporalVideoStarter(temporal: { client: Client; taskQueue: string }): VideoWorkflowStarter {
  const { client, taskQueue } = temporal;
  return {
    taskQueue,
    async start(input) {
      try {
        await client.workflow.start<typeof videoTaskWorkflow>('videoTaskWorkflow', {
          workflowId: videoWorkflowId(input.taskId),
          taskQueue,
          args: [input],
          // A task id is used once, ever.
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        });
      } catch (err) {
        // Started before (a replayed submit): that run is this task's.
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    },

    async cancel(taskId) {
      try {
        await client.workflow.getHandle(videoWorkflowId(taskId)).signal('cancelVideo');
      } catch (err) {
        // Already finished: the task's row says so by the time the caller reads it again.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },
  };
}
