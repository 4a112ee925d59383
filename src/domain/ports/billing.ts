import type { Hold, ReserveInput, SettleInput } from '../billing/holds';
import type { ReleaseRow, ReserveRow, SettleRow } from '../billing/operations';
import type { Tx } from './transactions';

/**
 * Quota holds and their settles into the ledger: each step is one SQL function of src/db/functions.sql (one round
 * trip, its own transaction unless given one), answering a status row the domain reads (billing/holds.ts).
 */
export interface HoldRepository {
  reserve(input: ReserveInput, tx?: Tx): Promise<ReserveRow>;
  settle(businessKey: string, input: SettleInput, tx?: Tx): Promise<SettleRow>;
  release(businessKey: string, opts?: { asyncCommit?: boolean }, tx?: Tx): Promise<ReleaseRow>;
  get(businessKey: string, tx?: Tx): Promise<Hold | null>;
  /** The group commit: encoded operations (billing/operations.ts) in one statement; one result per operation. */
  runBatch(ops: string[]): Promise<unknown[]>;
  /** Business keys of holds whose expiry passed, oldest first. */
  expired(limit: number): Promise<string[]>;
}
