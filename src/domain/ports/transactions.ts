/**
 * One database transaction, opaque to the domain: a repository method given one writes inside it, so what a
 * service writes across aggregates (a key, its audit row, the notice to other replicas) commits or rolls back as
 * one. src/db makes them (a pg client between BEGIN and COMMIT).
 */
export interface Tx {
  readonly __brand: 'Tx';
}

/** Runs `fn` while no other process runs `fn` for the same lock id (a one-time set-up racing its replicas). */
export interface Locks {
  exclusive<T>(lockId: number, fn: () => Promise<T>): Promise<T>;
}

/** Runs work in one transaction: committed when it resolves, rolled back when it throws. */
export interface Transactions {
  run<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
}
