import type { Pool } from 'pg';
import type { Repositories } from '../../domain/ports/repositories';
import { createBatchRepository } from './batches';
import { createWebhookRepository } from './webhooks';

/** The repositories over one pool (PostgreSQL, or PGlite behind the same pg interface). */
export function createRepositories(db: Pool): Repositories {
  return {
    batches: createBatchRepository(db),
    webhooks: createWebhookRepository(db),
  };
}
