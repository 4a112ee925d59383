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
import { withAdvisoryLock } from '../advisory-lock';
import { createUsageReports } from './usage';
import { createVideoTaskRepository } from './video-tasks';
import { createWebhookRepository } from './webhooks';

/** The repositories over one pool (PostgreSQL, or PGlite behind the same pg interface). */
export function createRepositories(db: Pool): Repositories {
  return {
    transactions: createTransactions(db),
    locks: { exclusive: (lockId, fn) => withAdvisoryLock(db, lockId, fn) },
    accounts: createAccountRepository(db),
    signInFailures: createSignInFailureRepository(db),
    audit: createAuditRepository(db),
    holds: createHoldRepository(db),
    keys: createKeyRepository(db),
    keyBatches: createKeyBatchRepository(db),
    batches: createBatchRepository(db),
    batchFiles: createBatchFileRepository(db),
    videoTasks: createVideoTaskRepository(db),
    usage: createUsageReports(db),
    webhooks: createWebhookRepository(db),
  };
}
