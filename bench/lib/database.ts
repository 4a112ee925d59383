import { Client } from 'pg';

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
  const name = `gateway_bench_${Date.now()}_${process.pid}`;
  const admin = new Client({ connectionString: LOCAL_SERVER, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(`no PostgreSQL at 127.0.0.1:5432 and BENCH_DATABASE_URL is unset (${(err as Error).message})`);
  }
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(LOCAL_SERVER);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    description: `PostgreSQL at 127.0.0.1:5432, fresh database ${name}`,
    async close() {
      const c = new Client({ connectionString: LOCAL_SERVER });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await c.end();
    },
  };
}
