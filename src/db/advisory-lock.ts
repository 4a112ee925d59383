import type { Pool } from 'pg';
import { isSingleSession } from './pool';

const processLocks = new Map<number, Promise<unknown>>();

/** One holder at a time per lock id within this process: each caller waits for the one before it. */
async function withProcessLock<T>(lockId: number, fn: () => Promise<T>): Promise<T> {
  const before = processLocks.get(lockId) ?? Promise.resolve();
  const mine = before.catch(() => undefined).then(fn);
  processLocks.set(lockId, mine);
  try {
    return await mine;
  } finally {
    if (processLocks.get(lockId) === mine) processLocks.delete(lockId);
  }
}

/**
 * Runs fn while no other process (on a real PostgreSQL: a session advisory lock on a connection of its own)
 * runs fn for the same lock id. fn uses the pool as usual. The embedded database has one session, in which
 * advisory locks are re-entrant and so exclude nothing, and its one connection is needed by fn itself; only
 * one process can open it (the DATA_DIR lock), so an in-process lock is the whole of the exclusion there.
 */
export async function withAdvisoryLock<T>(db: Pool, lockId: number, fn: () => Promise<T>): Promise<T> {
  if (isSingleSession(db)) return withProcessLock(lockId, fn);
  const lock = await db.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [lockId]);
    return await fn();
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [lockId]).catch(() => undefined);
    lock.release();
  }
}
