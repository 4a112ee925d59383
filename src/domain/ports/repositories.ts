import type { AccountRepository, SignInFailureRepository } from './accounts';
import type { AuditRepository } from './audit';
import type { BatchFileRepository } from './batch-files';
import type { BatchRepository } from './batches';
import type { HoldRepository } from './billing';
import type { KeyBatchRepository, KeyRepository } from './keys';
import type { Locks, Transactions } from './transactions';
import type { UsageReports } from './usage';
import type { VideoTaskRepository } from './video-tasks';
import type { WebhookRepository } from './webhooks';

/**
 * Every repository of the gateway's data, one per aggregate; src/db/repositories implements them once for
 * PostgreSQL and PGlite alike. The composition root builds them and hands each service the ones it uses.
 */
export interface Repositories {
  /** Runs work in one transaction; the repositories' methods that take a Tx write inside it. */
  transactions: Transactions;
  /** Excludes other processes from a one-time set-up. */
  locks: Locks;
  accounts: AccountRepository;
  signInFailures: SignInFailureRepository;
  audit: AuditRepository;
  holds: HoldRepository;
  keys: KeyRepository;
  keyBatches: KeyBatchRepository;
  batches: BatchRepository;
  batchFiles: BatchFileRepository;
  videoTasks: VideoTaskRepository;
  usage: UsageReports;
  webhooks: WebhookRepository;
}
