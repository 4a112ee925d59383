import { http, newAccount, startGateway, startWorker, TEST_SECRET, TestGateway } from '../helpers/harness';
import { KeyCipher } from '../../src/domain/keys/key-material';
import { waitForBatch } from '../helpers/worker-batches';
import { fetchAllRuns, historyTexts } from '../helpers/worker-history';

/** Temporal's hard limits are 51,200 events / 50 MB per run; a batch run must stay far below. */
const MAX_EVENTS_PER_RUN = 1_000;

describe('a batch of 100,000 keys', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;

  beforeAll(async () => {
    gw = await startGateway();
    worker = await startWorker(gw);
  });
  afterAll(async () => {
    await worker.stop();
    await gw.close();
  });

  it('is accepted and completes with exactly 100,000 keys, continuing as new within the history limits', async () => {
    // 50 chunks of 2,000, 4 at once; each run starts 10 and continues as new once they are done: 5 runs.
    Object.assign(gw.deps.batches.settings, { chunkSize: 2000, parallelChunks: 4, continueAsNewAfterChunks: 10 });
    const acct = await newAccount(gw.db);
    const started = Date.now();
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', {
      auth: acct.systemToken, body: { count: 100_000, name: 'big', remain_quota: 500_000 },
    });
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ status: 'running', requested: 100_000, created: 0 });
    const id = res.body.data.id;

    const progress: number[] = [];
    const done = await waitForBatch(gw.baseUrl, acct.systemToken, id, {
      timeoutMs: 240_000,
      intervalMs: 250,
      until: (b) => {
        progress.push(b.created);
        return b.status !== 'running';
      },
    });
    const elapsed = Date.now() - started;
    process.stdout.write(`[batch-large] 100,000 keys through the workflow in ${elapsed} ms\n`);
    expect(done).toMatchObject({ status: 'completed', requested: 100_000, created: 100_000 });
    // Progress was visible while it ran.
    expect(progress.some((n) => n > 0 && n < 100_000)).toBe(true);

    const { rows } = await gw.db.query(
      `SELECT count(*)::int AS n, count(DISTINCT batch_index)::int AS d, min(batch_index) AS lo, max(batch_index) AS hi,
              count(DISTINCT key_hash)::int AS h
         FROM tokens WHERE batch_id = $1`,
      [id],
    );
    expect(rows[0]).toEqual({ n: 100_000, d: 100_000, lo: 1, hi: 100_000, h: 100_000 });
    const list = await http(gw.baseUrl, 'GET', `/api/token/batch/${id}/keys?p=1000&page_size=100`, { auth: acct.systemToken });
    expect(list.headers.get('x-total-count')).toBe('100000');
    expect(list.body.data.at(-1).name).toBe('big-100000');

    await gw.temporal.workflow.getHandle(`keys:${id}`).result();
    const runs = await fetchAllRuns(gw.temporal, `keys:${id}`);
    expect(runs.length).toBe(5);
    for (const { history } of runs) expect(history.events!.length).toBeLessThan(MAX_EVENTS_PER_RUN);

    // And none of the 100,000 keys is anywhere in those histories.
    const cipher = new KeyCipher(TEST_SECRET);
    const stored = await gw.db.query<{ key_cipher: Buffer }>('SELECT key_cipher FROM tokens WHERE batch_id = $1', [id]);
    const keys = new Set(stored.rows.map((r) => cipher.decrypt(r.key_cipher)));
    expect(keys.size).toBe(100_000);
    for (const { history } of runs) {
      const text = historyTexts(history).join('\n') + JSON.stringify(history);
      // Every 48-character window of every alphanumeric run, so a key inside a longer run is found too.
      const found: string[] = [];
      for (const [run] of text.matchAll(/[A-Za-z0-9]{48,}/g)) {
        for (let i = 0; i + 48 <= run.length; i++) if (keys.has(run.slice(i, i + 48))) found.push(run.slice(i, i + 48));
      }
      expect(found).toEqual([]);
    }
  }, 300_000);
});
