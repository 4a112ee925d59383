import { Client, Pool, PoolClient, types } from 'pg';

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

const singleSessionPools = new WeakSet<Pool>();

/**
 * A client that starts from a clean session. The embedded database has exactly one session, whichever socket
 * connection reaches it, so a client replacing an earlier one inherits that one's prepared statements,
 * settings, listeners and temporary tables; `pg` would then prepare its named statements a second time
 * (42P05). DISCARD ALL gives the new client the fresh session it assumes.
 */
class FreshSessionClient extends Client {
  override connect(): Promise<Client>;
  override connect(callback: (err: Error | null, client?: Client) => void): void;
  override connect(callback?: (err: Error | null, client?: Client) => void): Promise<Client> | void {
    const ready = super.connect().then(async () => {
      await this.query('DISCARD ALL');
      return this as Client;
    });
    if (!callback) return ready;
    ready.then((client) => callback(null, client), (err: Error) => callback(err));
  }
}

/**
 * The pool for a database that has a single session (embedded PGlite): one connection at a time, kept open,
 * so the session state `pg` tracks per connection (named prepared statements) is the session's real state,
 * and queries of different requests never interleave inside it. PGlite runs one query at a time anyway, so
 * a larger pool would only queue in the socket server instead of here. A caller waiting longer than
 * `connectionTimeoutMillis` for the connection gets an error instead of hanging (a caller that holds the
 * connection and asks the pool for another one would otherwise wait forever).
 */
export function createSingleSessionPool(
  connectionString: string,
  opts: { idleTimeoutMillis?: number; connectionTimeoutMillis?: number } = {},
): Pool {
  const pool = new Pool({
    connectionString,
    max: 1,
    idleTimeoutMillis: opts.idleTimeoutMillis ?? 0,
    connectionTimeoutMillis: opts.connectionTimeoutMillis ?? 30_000,
    Client: FreshSessionClient,
  });
  pool.on('error', () => undefined);
  singleSessionPools.add(pool);
  return pool;
}

/** Whether `db` reaches a database with a single session (see createSingleSessionPool). */
export function isSingleSession(db: Pool): boolean {
  return singleSessionPools.has(db);
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
