import { randomInt } from 'node:crypto';
import { Client, Pool } from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';
import { migrate } from '../../src/db/migrate';
import { createPool, createSingleSessionPool } from '../../src/db/pool';
import { createScratchDatabase } from '../../src/db/scratch-database';

export interface TestDatabase {
  url: string;
  kind: string;
  close(): Promise<void>;
}

const LOCAL_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';

async function reachable(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 1500 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function freshDatabaseOn(serverUrl: string): Promise<TestDatabase> {
  const db = await createScratchDatabase(serverUrl, 'gateway_test');
  return { url: db.url, kind: `PostgreSQL at ${new URL(db.url).host}, fresh database ${db.name}`, close: db.close };
}

/** TEST_DATABASE_URL as given; else a fresh database on 127.0.0.1:5432; else embedded PGlite. */
export async function resolveTestDatabase(): Promise<TestDatabase> {
  if (process.env.TEST_DATABASE_URL) {
    return { url: process.env.TEST_DATABASE_URL, kind: 'TEST_DATABASE_URL', close: async () => undefined };
  }
  if (await reachable(LOCAL_SERVER)) return freshDatabaseOn(LOCAL_SERVER);
  if (process.env.GATEWAY_TEST_REQUIRE_POSTGRES) {
    throw new Error('GATEWAY_TEST_REQUIRE_POSTGRES is set but no PostgreSQL answers on 127.0.0.1:5432');
  }
  const embedded = await startEmbeddedPostgres();
  return { url: embedded.url, kind: 'embedded PGlite (no PostgreSQL on 127.0.0.1:5432)', close: embedded.close };
}

/** Set by test/helpers/embedded-mode.ts in the `embedded` jest project: the gateway runs on PGlite. */
export function embeddedMode(): boolean {
  return process.env.GATEWAY_TEST_DB_MODE === 'embedded';
}

export interface TestPool {
  pool: Pool;
  url: string;
  close(): Promise<void>;
}

/**
 * The database a test gateway runs on, opened the way the gateway opens it. In the embedded project: a fresh
 * in-memory PGlite of its own (migrated) behind its single-session pool, as `npm start` runs it. Otherwise a
 * pool of `size` on the run's shared PostgreSQL database (test files isolate by account there).
 * `embeddedDataDir` keeps the embedded database in a folder, so a test can stop and reopen it (a restart);
 * `scratch` gives a PostgreSQL test a fresh database of its own, dropped at close.
 */
export async function openTestPool(
  size = 5,
  opts: { idleTimeoutMillis?: number; embeddedDataDir?: string; scratch?: boolean } = {},
): Promise<TestPool> {
  if (embeddedMode()) {
    const embedded = await startEmbeddedPostgres({ dataDir: opts.embeddedDataDir });
    const fresh = (await migrate(embedded.url)).applied.length > 0;
    const pool = createSingleSessionPool(embedded.url, opts);
    // Every embedded database numbers its batches from 1, but the run shares one Temporal server (npm start has
    // one per DATA_DIR): start each database's numbering elsewhere so workflow ids `keys:<id>` never collide.
    if (fresh) await pool.query(`SELECT setval('key_batches_id_seq', $1)`, [randomInt(1, 2 ** 40)]);
    return {
      pool,
      url: embedded.url,
      async close() {
        await pool.end();
        await embedded.close();
      },
    };
  }
  const url = process.env.GATEWAY_TEST_DATABASE_URL;
  if (!url) throw new Error('GATEWAY_TEST_DATABASE_URL is unset: run the tests through jest (test/helpers/global-setup.ts)');
  if (opts.scratch) {
    // A database of the test's own on the same server: for data at a scale other test files should not share.
    const scratch = await createScratchDatabase(url, 'gateway_scratch');
    await migrate(scratch.url);
    const pool = createPool(scratch.url, size);
    // Batch workflow ids `keys:<id>` are per Temporal server, which this database shares with the run's.
    await pool.query(`SELECT setval('key_batches_id_seq', $1)`, [randomInt(1, 2 ** 40)]);
    return {
      pool,
      url: scratch.url,
      async close() {
        await pool.end();
        await scratch.close();
      },
    };
  }
  const pool = createPool(url, size);
  if (opts.idleTimeoutMillis !== undefined) pool.options.idleTimeoutMillis = opts.idleTimeoutMillis;
  return { pool, url, close: () => pool.end() };
}
