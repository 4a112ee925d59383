import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export interface ScratchDatabase {
  name: string;
  url: string;
  /** Drops the database, closing whatever connections are still open to it. */
  close(): Promise<void>;
}

async function onServer<T>(serverUrl: string, fn: (c: Client) => Promise<T>, connectTimeoutMs?: number): Promise<T> {
  const c = new Client({ connectionString: serverUrl, connectionTimeoutMillis: connectTimeoutMs });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/**
 * A fresh, uniquely named database on the server `serverUrl` points at (any database of it), for test runs,
 * benchmarks and history recordings that must not share state.
 */
export async function createScratchDatabase(
  serverUrl: string,
  prefix: string,
  opts: { connectTimeoutMs?: number } = {},
): Promise<ScratchDatabase> {
  const name = `${prefix}_${Date.now()}_${process.pid}_${randomBytes(3).toString('hex')}`;
  await onServer(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`), opts.connectTimeoutMs);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    close: () => onServer(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}
