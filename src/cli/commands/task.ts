import type { Command } from 'commander';
/** Loaded when a history command runs: it brings the Temporal worker SDK, which no other command (nor the api) needs. */
const history = () => import('../shared/workflow-history');

/** `task history` and `task replay`: the audit of video tasks, over Temporal directly like `keys batch-history`. */
export function registerTaskCommands(program: Command): void {
  const task = program.command('task').description('video tasks: export a task\'s workflow history and replay it');

  task
    .command('history')
    .description('export the workflow history of a video task (video:<task id>) or an inference batch (batch:<id>) as JSON, for audit and `task replay`; '
      + 'reads Temporal directly: TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE, else the dev server in DATA_DIR (gateway stopped)')
    .argument('<task-id>', 'the task id as its family shows it (video_..., a uuid, or <model>:<uuid>), or a batch id (batch_..., msgbatch_...)')
    .option('--out <file>', 'write the JSON to this new file (default: standard output)')
    .option('--force', 'overwrite --out if it exists', false)
    .action(async (taskId: string, opts: { out?: string; force: boolean }) => {
      const [{ inferenceBatchWorkflowId }, { videoWorkflowId }] = await Promise.all([import('../../temporal/inference-batch-starter'), import('../../temporal/video-starter')]);
      await (await history()).exportHistoryToFile(/^(batch|msgbatch)_/.test(taskId) ? inferenceBatchWorkflowId(taskId) : videoWorkflowId(taskId), opts);
    });

  task
    .command('replay')
    .description('replay exported histories against the workflow code of this checkout and say whether each is deterministic; exits 1 when any is not')
    .argument('<file...>', 'files written by `task history` (or GET /api/task/{id}/history, or Temporal\'s own JSON history files)')
    .option('--workflow-bundle <file>', 'replay against this pre-built workflow bundle instead of src/workflows')
    .action(async (files: string[], opts: { workflowBundle?: string }) => {
      await (await history()).replayHistoryFiles(files, opts);
    });
}
