import type { Pool } from 'pg';
import { CreditLeases, type LeaseOptions } from './credit-leases';
import { BillingBatcher } from './holds';

/**
 * The relay's billing in one process: the group-commit queue every hold, settle and release goes through, and the
 * credit leases calls are reserved from (off with `leases: false`). Chat and /v1/messages share one.
 */
export class RelayBilling {
  readonly batcher: BillingBatcher;
  readonly leases: CreditLeases | null;

  constructor(db: Pool, opts: { leases?: LeaseOptions | false } = {}) {
    this.batcher = new BillingBatcher(db);
    this.leases = opts.leases === false ? null : new CreditLeases(this.batcher, opts.leases);
  }

  /**
   * Read-your-writes for the readers of balances and the ledger in this process (`/api/*`): every settle queued so
   * far has committed, and the leases not in use are given back, so remain_quota shows what calls left.
   */
  async barrier(): Promise<void> {
    if (this.leases?.active) await this.leases.barrier();
    else await this.batcher.idle();
  }

  /** At shutdown, after the last request: the settles still queued run and every lease is given back. */
  async close(): Promise<void> {
    if (this.leases) await this.leases.close();
    await this.batcher.idle();
  }
}
