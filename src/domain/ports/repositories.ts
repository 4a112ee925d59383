import type { BatchRepository } from './batches';
import type { WebhookRepository } from './webhooks';

/**
 * Every repository of the gateway's data, one per aggregate; src/db/repositories implements them once for
 * PostgreSQL and PGlite alike. The composition root builds them and hands each service the ones it uses.
 */
export interface Repositories {
  batches: BatchRepository;
  webhooks: WebhookRepository;
}
