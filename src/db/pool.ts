import { Pool, PoolClient, types } from 'pg';

// BIGINT columns hold credits and ids; they stay far below 2^53, so read them as numbers.
types.setTypeParser(types.builtins.INT8, (v) => Number(v));

export type Db = Pool;
export type Tx = PoolClient;

export function createPool(connectionString: string, max = 10): Pool {
  const pool = new Pool({ connectionString, max });
  // An idle client that loses its server connection emits here; without a listener it would crash the process.
  pool.on('error', () => undefined);
  return pool;
}

/** Runs fn inside one transaction; rolls back on any error. */
export async function inTransaction<T>(db: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
