import path from 'node:path';
import type { Pool } from 'pg';
import type { Config } from '../config';
import { startEmbeddedPostgres } from '../db/embedded-postgres';
import { migrate } from '../db/migrate';
import { createPool, createSingleSessionPool } from '../db/pool';
import { dataPaths, lockDataDir } from './data-dir';
import { Resources } from './resources';

export interface Database {
  url: string;
  pool: Pool;
  embedded: boolean;
  /** For start-up output: where the data lives, without credentials. */
  description: string;
  /** File names of the migrations this call applied (empty when the schema was already current). */
  applied: string[];
}

/** The URL with its password masked, safe to print. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/**
 * DATABASE_URL when set; otherwise PGlite persisted under DATA_DIR/pg, served on a loopback port so the same
 * `pg` code runs on both. Applies pending migrations either way, then opens a pool.
 */
export async function openDatabase(config: Config, resources: Resources, opts: { poolSize?: number } = {}): Promise<Database> {
  let url = config.DATABASE_URL;
  let description: string;
  if (url) {
    description = redactUrl(url);
  } else {
    lockDataDir(config.DATA_DIR, resources);
    const dir = dataPaths(config.DATA_DIR).postgres;
    const embedded = await startEmbeddedPostgres({ dataDir: dir });
    resources.add('the embedded PostgreSQL', () => embedded.close());
    url = embedded.url;
    description = `embedded PGlite in ${dir}`;
  }
  const applied = (await migrate(url)).applied.map((file) => path.basename(file));
  // The embedded database is one session: it gets one connection (see createSingleSessionPool).
  const pool = config.DATABASE_URL ? createPool(url, opts.poolSize ?? 10) : createSingleSessionPool(url);
  resources.add('the database pool', () => pool.end());
  return { url, pool, embedded: !config.DATABASE_URL, description, applied };
}

/** For one-shot commands (migrate, account): opens the database, runs fn, closes everything it opened. */
export async function withDatabase<T>(config: Config, fn: (db: Database) => Promise<T>): Promise<T> {
  const resources = new Resources();
  try {
    return await fn(await openDatabase(config, resources, { poolSize: 2 }));
  } finally {
    await resources.closeAll((line) => process.stderr.write(`${line}\n`));
  }
}
