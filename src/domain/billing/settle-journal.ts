/**
 * Where a lease settle is recorded before its answer leaves (docs/decisions/0062-settle-journal.md): a record that
 * outlives this process, written without a round trip to PostgreSQL. The settle itself goes to PostgreSQL right
 * after, in the group commit; if this process dies first, another process (or this one's successor) replays the
 * record. A replayed settle bills once: the ledger takes one row per request id. The file journal
 * (src/runtime/settle-journal-files.ts) implements it.
 */
export interface SettleJournal {
  /**
   * Records a `settle_lease` operation as billing_batch reads it (operationJson); null when it could not be (the
   * caller then waits for the commit, as without a journal).
   */
  append(operation: string): JournalEntry | null;
  /** PostgreSQL answered the operation (it committed, or found it billed already): its record may go. */
  done(entry: JournalEntry): void;
}

/** One recorded operation, as `append` returned it. */
export type JournalEntry = { readonly journal: unknown };
