import type { Pool } from 'pg';
import type { KeyCipher } from '../domain/keys/key-material';

export interface ActivityDeps {
  db: Pool;
  cipher: KeyCipher;
}

/** Activities are thin wrappers over domain code; workflows import only their type. */
export function createActivities(deps: ActivityDeps) {
  return {
    /** Proves the worker can reach the database; the toolchain smoke workflow calls it. */
    async databaseNow(): Promise<string> {
      const res = await deps.db.query<{ now: Date }>('SELECT now() AS now');
      return res.rows[0].now.toISOString();
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
