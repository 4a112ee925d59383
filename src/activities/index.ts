import { type BatchActivityDeps, createBatchActivities } from './batches';
import { createKeyActivities, type KeyActivityDeps } from './keys';
import { createVideoActivities, type VideoActivityDeps } from './video';
import { createWebhookActivities, type WebhookActivityDeps } from './webhooks';

/** What each group of activities needs, and nothing more (the composition root builds them). */
export interface ActivityDeps {
  /** The database's clock: proves the worker reaches it (the toolchain smoke workflow calls it). */
  databaseNow(): Promise<Date>;
  keys: KeyActivityDeps;
  video: VideoActivityDeps;
  webhooks: WebhookActivityDeps;
  /** Batch inference (the lines' runner on the process's relay engine). */
  inferenceBatches: BatchActivityDeps;
}

/** Activities are thin wrappers over domain code; workflows import only their type. */
export function createActivities(deps: ActivityDeps) {
  return {
    async databaseNow(): Promise<string> {
      return (await deps.databaseNow()).toISOString();
    },
    ...createKeyActivities(deps.keys),
    ...createVideoActivities(deps.video),
    ...createWebhookActivities(deps.webhooks),
    ...createBatchActivities(deps.inferenceBatches),
  };
}

export type Activities = ReturnType<typeof createActivities>;
