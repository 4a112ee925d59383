import { http, newAccount, startGateway, startWorker, TestGateway } from './harness';

/** What most batch test files start with: a gateway, a worker on its task queue, and a fresh account. */
export async function startBatchStack(opts: { chunkSize?: number } = {}): Promise<{
  gw: TestGateway;
  worker: Awaited<ReturnType<typeof startWorker>>;
  acct: Awaited<ReturnType<typeof newAccount>>;
  auth: string;
}> {
  const gw = await startGateway();
  if (opts.chunkSize) gw.deps.batches.settings.chunkSize = opts.chunkSize;
  // startWorker announces key changes on the gateway's own bus, as the production worker does over LISTEN/NOTIFY.
  const worker = await startWorker(gw);
  const acct = await newAccount(gw.db);
  return { gw, worker, acct, auth: acct.systemToken };
}

/** Polls GET /api/token/batch/{id} until the batch leaves `running` (or `until` holds); returns the last record. */
export async function waitForBatch(
  baseUrl: string,
  auth: string,
  id: number,
  opts: { timeoutMs?: number; until?: (batch: any) => boolean; intervalMs?: number } = {},
): Promise<any> {
  const until = opts.until ?? ((b: any) => b.status !== 'running');
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    const res = await http(baseUrl, 'GET', `/api/token/batch/${id}`, { auth });
    if (res.status !== 200) throw new Error(`GET batch ${id}: ${res.status} ${JSON.stringify(res.body)}`);
    if (until(res.body.data)) return res.body.data;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${JSON.stringify(res.body.data)} after ${opts.timeoutMs ?? 60_000} ms`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
  }
}

/** Every key record of a batch, through the paged GET /api/token/batch/{id}/keys. */
export async function allBatchKeys(baseUrl: string, auth: string, id: number): Promise<any[]> {
  const out: any[] = [];
  for (let p = 1; ; p++) {
    const res = await http(baseUrl, 'GET', `/api/token/batch/${id}/keys?p=${p}&page_size=100`, { auth });
    if (res.status !== 200) throw new Error(`GET batch keys: ${res.status} ${JSON.stringify(res.body)}`);
    out.push(...res.body.data);
    if (res.body.data.length < 100) return out;
  }
}
