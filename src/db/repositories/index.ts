import type { Pool } from 'pg';
import type { Repositories } from '../../domain/ports/repositories';
import { createAccountRepository, createSignInFailureRepository } from './accounts';
import { createAuditRepository } from './audit';
import { createBatchFileRepository } from './batch-files';
import { createBatchRepository } from './batches';
import { createHoldRepository } from './holds';
import { createKeyBatchRepository } from './key-batches';
import { createKeyRepository } from './keys';
import { createTransactions } from './queryable';
import { createVideoTaskRepository } from './video-tasks';
import { createWebhookRepository } from './webhooks';

/** The repositories over one pool (PostgreSQL, or PGlite behind the same pg interface). */
export function createRepositories(db: Pool): Repositories {
  return {
    transactions: createTransactions(db),
    accounts: createAccountRepository(db),
    signInFailures: createSignInFailureRepository(db),
    audit: createAuditRepository(db),
    holds: createHoldRepository(db),
    keys: createKeyRepository(db),
    keyBatches: createKeyBatchRepository(db),
    batches: createBatchRepository(db),
    batchFiles: createBatchFileRepository(db),
    videoTasks: createVideoTaskRepository(db),
    webhooks: createWebhookRepository(db),
  };
}
