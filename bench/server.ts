/**
 * The api process the benchmarks load: the real Fastify app (buildApp over the composition root,
 * createServices) on a real Postgres, with the LISTEN/NOTIFY key change bus and LOG_LEVEL=info as in
 * production, logging one JSON line per request to stdout (the parent points stdout at a file). GATEWAY_CONFIG
 * names the channels when set; otherwise the built-in gateway config serves, with its upstream simulator in this
 * process. With TEMPORAL_ADDRESS it has a Temporal client (TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE) for the routes
 * that start workflows (the video scenario); otherwise none. Started by bench/lib/server-process.ts, which it tells its address
 * over IPC.
 */
import { Client, Connection } from '@temporalio/client';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/api/app';
import { createPool } from '../src/db/pool';
import { createPgKeyChangeBus } from '../src/db/pg-key-change-bus';
import { createServices, openGatewayConfig } from '../src/runtime/services';
import { settleJournalOf } from '../src/runtime/settle-journal-files';
import { tuneHeapGrowth } from '../src/runtime/heap';

// As the gateway CLI (src/cli/main.ts) does for every gateway process.
tuneHeapGrowth();

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  const secret = process.env.GATEWAY_SECRET;
  if (!url || !secret) throw new Error('DATABASE_URL and GATEWAY_SECRET are required');
  const db = createPool(url, Number(process.env.DB_POOL_SIZE ?? 10));
  const gatewayConfig = await openGatewayConfig(process.env.GATEWAY_CONFIG || undefined);
  const connection = process.env.TEMPORAL_ADDRESS ? await Connection.connect({ address: process.env.TEMPORAL_ADDRESS }) : null;
  const temporal = connection
    ? { client: new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' }), taskQueue: process.env.TEMPORAL_TASK_QUEUE ?? 'gateway' }
    : null;
  // As `gateway api` runs: an api-only process starts no video workflow; the workers do (bench/scenarios/video.ts).
  const video = temporal ? { outbox: { passive: true } } : undefined;
  // As `gateway api` runs: settles journaled before the answer (BILLING_JOURNAL_DIR, `off` for none), here in a
  // folder of this process's own by default.
  const journalDir = process.env.BILLING_JOURNAL_DIR ?? mkdtempSync(path.join(os.tmpdir(), 'bench-billing-journal-'));
  const settleJournal = settleJournalOf(journalDir, '.', { embedded: false, url });
  const services = await createServices({ db, secret, temporal, keyChangeBus: createPgKeyChangeBus(url), gatewayConfig, video, settleJournal });
  const app = await buildApp(services.api, { logLevel: process.env.LOG_LEVEL ?? 'info' });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.send?.({ type: 'listening', address, pid: process.pid });

  const stop = async () => {
    const b = services.api.billing.batcher;
    process.stderr.write(`[bench server] billing queue peak: ${b.peakQueued} operations; ${b.batches} batches, ${(b.operations / Math.max(1, b.batches)).toFixed(1)} operations each\n`);
    await app.close();
    await services.close();
    await gatewayConfig.close();
    await connection?.close();
    await db.end();
    if (!process.env.BILLING_JOURNAL_DIR) rmSync(journalDir, { recursive: true, force: true });
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
