import type { OutboundPolicy } from '../domain/outbound/address-policy';
import type { Pool } from 'pg';
import type { Repositories } from '../domain/ports/repositories';
import type { PostOutbound } from '../domain/ports/outbound';
import type { KeyChangeBus } from '../domain/keys/key-change-bus';
import type { KeyCipher } from '../domain/keys/key-material';
import type { KeySealer } from '../domain/keys/key-sealer';
import type { ConfigStore } from '../gateway-config/store';
import { type BatchActivityDeps, createBatchActivities } from './batches';
import { createKeyActivities } from './keys';
import { createVideoActivities } from './video';
import { createWebhookActivities } from './webhooks';
import type { VideoLinkSigner } from '../domain/video/signed-links';
import type { VideoTaskRunner } from '../domain/video/task-runner';
import type { ParkedActivities } from '../temporal/parked-activities';

export interface ActivityDeps {
  db: Pool;
  /** The gateway's data, one repository per aggregate. */
  repos: Repositories;
  /** The POST of webhooks, to public addresses only (src/upstream/public-request.ts). */
  postOutbound: PostOutbound;
  /**
   * The repositories of bulk key work (a chunk's transaction): over a small pool of their own in a worker on
   * PostgreSQL, so chunks queue among themselves, never in front of the api's or the other activities' queries.
   */
  bulkRepos: Repositories;
  cipher: KeyCipher;
  /** Makes the material of new keys in bulk (on threads of their own in a worker). */
  keySealer: KeySealer;
  /** Announces key status changes made by bulk operations, so api replicas drop cached keys. */
  keyChanges: KeyChangeBus;
  /** Channels and prices; an activity takes `config.current()` once per attempt. */
  config: ConfigStore;
  /** Signs the result links a webhook carries. */
  videoLinks: VideoLinkSigner;
  /** Where webhooks may be delivered. */
  outbound: OutboundPolicy;
  /** Runs video tasks: submit, wait, end. */
  videoRunner: VideoTaskRunner;
  /** Where a video task's wait runs outside the SDK (completed asynchronously); without it, in the activity. */
  parkedActivities?: ParkedActivities | null;
  /** Batch inference (the lines' runner on the process's relay engine); null in processes built without it. */
  inferenceBatches?: BatchActivityDeps | null;
}

/** Activities are thin wrappers over domain code; workflows import only their type. */
export function createActivities(deps: ActivityDeps) {
  return {
    /** Proves the worker can reach the database; the toolchain smoke workflow calls it. */
    async databaseNow(): Promise<string> {
      const res = await deps.db.query<{ now: Date }>('SELECT now() AS now');
      return res.rows[0].now.toISOString();
    },
    ...createKeyActivities(deps),
    ...createVideoActivities(deps),
    ...createWebhookActivities(deps),
    ...createBatchActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
