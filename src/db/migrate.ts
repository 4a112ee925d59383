import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';

const MIGRATIONS_DIR = path.join(__dirname, 'migrations');
/** The live definition of every SQL function (applied after the numbered migrations when its text changed). */
export const FUNCTIONS_FILE = path.join(__dirname, 'functions.sql');
// Any constant works; it only has to be the same for every process that migrates this database.
const MIGRATION_LOCK_ID = 727_001;

/**
 * Applies the forward-only numbered SQL migrations, then functions.sql when its checksum differs from the one last
 * applied; safe to call from several processes at once.
 */
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
    const applied = (await postgrator.migrate()).map((m) => m.filename);
    if (await applyFunctions(client)) applied.push(path.basename(FUNCTIONS_FILE));
    return { applied };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await client.end();
  }
}

/** Runs functions.sql in one transaction unless this text was applied last; true when it ran. */
async function applyFunctions(client: Client): Promise<boolean> {
  const sql = readFileSync(FUNCTIONS_FILE, 'utf8');
  const checksum = createHash('sha256').update(sql).digest('hex');
  const last = await client.query<{ checksum: string }>("SELECT checksum FROM schema_functions WHERE name = 'functions.sql'");
  if (last.rows[0]?.checksum === checksum) return false;
  await client.query('BEGIN');
  try {
    await client.query(sql);
    await client.query(
      `INSERT INTO schema_functions (name, checksum) VALUES ('functions.sql', $1)
       ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`,
      [checksum],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  return true;
}
