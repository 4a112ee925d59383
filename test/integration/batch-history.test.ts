// test modes: postgres, embedded
import { http, startWorker, TestGateway } from '../helpers/harness';
import { allBatchKeys, waitForBatch, startBatchStack } from '../helpers/worker-batches';
import { fetchAllRuns, historyTexts } from '../helpers/worker-history';

/** 48 characters of the key alphabet in a row: what a key (or a ciphertext-free leak of one) looks like. */
const KEY_SHAPE = /[A-Za-z0-9]{48}/g;

describe('key material never enters workflow history', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let auth: string;

  beforeAll(async () => {
    ({ gw, worker, auth } = await startBatchStack());
  });
  afterAll(async () => {
    await worker.stop();
    await gw.close();
  });

  it('reads the full history of every run of a completed issue, status and rotation batch and finds no key in it', async () => {
    Object.assign(gw.deps.batches.settings, { chunkSize: 100, continueAsNewAfterChunks: 4 });
    const t0 = Date.now();
    const issued = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 550, name: 'hist', remain_quota: 5 } });
    const source = issued.body.data.id;
    expect(await waitForBatch(gw.baseUrl, auth, source)).toMatchObject({ status: 'completed', created: 550 });
    const status = await http(gw.baseUrl, 'PUT', `/api/token/batch/${source}?status_only=true`, { auth, body: { status: 2 } });
    await waitForBatch(gw.baseUrl, auth, status.body.data.id);
    const rotate = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 1 } });
    const rot = rotate.body.data.id;
    expect(await waitForBatch(gw.baseUrl, auth, rot)).toMatchObject({ status: 'completed', created: 550 });

    process.stdout.write(`[history] three batches done in ${Date.now() - t0} ms\n`);
    const keys = new Set([
      ...(await allBatchKeys(gw.baseUrl, auth, source)).map((k) => k.key as string),
      ...(await allBatchKeys(gw.baseUrl, auth, rot)).map((k) => k.key as string),
    ]);
    expect(keys.size).toBe(1100);

    for (const [id, minRuns] of [[source, 2], [status.body.data.id, 2], [rot, 3]] as const) {
      await gw.temporal.workflow.getHandle(`keys:${id}`).result();
      const runs = await fetchAllRuns(gw.temporal, `keys:${id}`);
      // 6 chunks of 100 (issue/status), 12 (rotation: issue + disable), 4 per run: continue-as-new ran.
      expect(runs.length).toBeGreaterThanOrEqual(minRuns);
      let events = 0;
      for (const { history } of runs) {
        events += history.events?.length ?? 0;
        const decoded = historyTexts(history).join('\n');
        // The JSON form too: byte arrays show there as base64, so it complements the decoded text.
        const json = JSON.stringify(history);
        for (const key of keys) {
          expect(decoded.includes(key)).toBe(false);
          expect(json.includes(key)).toBe(false);
        }
        // Nothing key-shaped at all in the decoded text (hex digests such as the worker's build id are not keys).
        expect((decoded.match(KEY_SHAPE) ?? []).filter((m) => !/^[0-9a-f]+$/.test(m))).toEqual([]);
      }
      expect(events).toBeGreaterThan(20);
    }
    // The check would see a key if one were there: the decoded text does contain the plan's ids.
    const first = await fetchAllRuns(gw.temporal, `keys:${source}`);
    expect(historyTexts(first[0].history).some((t) => t.includes(`"batchId":${source}`))).toBe(true);
  });
});
