import type { Pool, PoolClient } from 'pg';
import type { Transactions, Tx } from '../../domain/ports/transactions';
import { inTransaction } from '../pool';

/** Where a repository's statement runs: in the caller's transaction when it gives one, else on the pool. */
export const on = (db: Pool, tx?: Tx): Pool | PoolClient => (tx ? clientOf(tx) : db);

/** The pg client a Tx is (src/db made it: the domain only carries it). */
export const clientOf = (tx: Tx): PoolClient => tx as unknown as PoolClient;

export const txOf = (client: PoolClient): Tx => client as unknown as Tx;

export function createTransactions(db: Pool): Transactions {
  return { run: (work) => inTransaction(db, (client) => work(txOf(client))) };
}
