import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';
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
