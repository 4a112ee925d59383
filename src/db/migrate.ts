import path from 'node:path';
import { Client } from 'pg';

const MIGRATIONS_DIR = path.join(__dirname, 'migrations');
// Any constant works; it only has to be the same for every process that migrates this database.
const MIGRATION_LOCK_ID = 727_001;

/** Applies the forward-only numbered SQL migrations; safe to call from several processes at once. */
export async function migrate(connectionString: string): Promise<{ applied: string[] }> {
  const { default: Postgrator } = await import('postgrator');
  const client = new Client({ connectionString });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    const postgrator = new Postgrator({
      migrationPattern: path.join(MIGRATIONS_DIR, '*.sql').replace(/\\/g, '/'),
      driver: 'pg',
      schemaTable: 'schema_migrations',
      execQuery: (query: string) => client.query(query),
    });
    const applied = await postgrator.migrate();
    return { applied: applied.map((m) => m.filename) };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await client.end();
  }
}
