/**
 * The api process the benchmarks load: the real Fastify app (buildApp over the composition root,
 * createServices) on a real Postgres, with the LISTEN/NOTIFY key change bus and LOG_LEVEL=info as in
 * production, logging one JSON line per request to stdout (the parent points stdout at a file). The
 * built-in gateway config serves, with its upstream simulator in this process. It has no Temporal client:
 * the benchmarked routes do not use one. Started by bench/lib/server-process.ts, which it tells its address
 * over IPC.
 */
import { buildApp } from '../src/api/app';
import { createPool } from '../src/db/pool';
import { createPgKeyChangeBus } from '../src/db/pg-key-change-bus';
import { createServices } from '../src/runtime/services';

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  const secret = process.env.GATEWAY_SECRET;
  if (!url || !secret) throw new Error('DATABASE_URL and GATEWAY_SECRET are required');
  const db = createPool(url, Number(process.env.DB_POOL_SIZE ?? 10));
  const services = await createServices({ db, secret, temporal: null, keyChangeBus: createPgKeyChangeBus(url) });
  const app = await buildApp(services.api, { logLevel: process.env.LOG_LEVEL ?? 'info' });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.send?.({ type: 'listening', address, pid: process.pid });

  const stop = async () => {
    await app.close();
    await services.close();
    await db.end();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
}

main().catch((err) => {
  process.stderr.write(`bench server failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
