import { createScratchDatabase } from '../../src/db/scratch-database';

export interface BenchDatabase {
  url: string;
  description: string;
  close(): Promise<void>;
}

const LOCAL_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * BENCH_DATABASE_URL as given (left in place afterwards), else a fresh database on the local
 * PostgreSQL server at 127.0.0.1:5432, dropped when the run ends. Benchmarks need a real server.
 */
export async function benchDatabase(): Promise<BenchDatabase> {
  const given = process.env.BENCH_DATABASE_URL;
  if (given) return { url: given, description: 'BENCH_DATABASE_URL', close: async () => undefined };
  const db = await createScratchDatabase(LOCAL_SERVER, 'gateway_bench', { connectTimeoutMs: 3000 }).catch((err: Error) => {
    throw new Error(`no PostgreSQL at 127.0.0.1:5432 and BENCH_DATABASE_URL is unset (${err.message})`);
  });
  return { url: db.url, description: `PostgreSQL at 127.0.0.1:5432, fresh database ${db.name}`, close: db.close };
}
