import { freePort } from '../net';
import { tightenTree } from '../private-files';

export interface EmbeddedPostgres {
  url: string;
  close(): Promise<void>;
}

/**
 * PGlite (Postgres compiled to WebAssembly) served over the Postgres wire protocol, so the same
 * `pg.Pool` code runs against it. `dataDir` persists it; without one it lives in memory.
 */
export async function startEmbeddedPostgres(opts: { dataDir?: string; port?: number } = {}): Promise<EmbeddedPostgres> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  // pg_trgm: the key list's name search (migration 021 uses it where the server has it).
  // A subpath export of the package (the project's TypeScript module resolution does not read export maps).
  const trgmModule = '@electric-sql/pglite/contrib/pg_trgm';
  const { pg_trgm } = (await import(trgmModule)) as { pg_trgm: import('@electric-sql/pglite').Extension };
  const options = { extensions: { pg_trgm } };
  const db = opts.dataDir ? await PGlite.create(opts.dataDir, options) : await PGlite.create(options);
  // PGlite (Emscripten) chmods the files of a new database 0666 whatever the umask: made 0600 here and at close.
  if (opts.dataDir) tightenTree(opts.dataDir);
  const port = opts.port ?? (await freePort());
  const server = new PGLiteSocketServer({ db, port, host: '127.0.0.1', maxConnections: 20 });
  await server.start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async close() {
      await server.stop();
      await db.close();
      if (opts.dataDir) tightenTree(opts.dataDir);
    },
  };
}
