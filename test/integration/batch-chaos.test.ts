import { randomUUID } from 'node:crypto';
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';
import { waitForBatch } from '../helpers/worker-batches';
import { fetchAllRuns } from '../helpers/worker-history';
import { spawnWorkerProcess, WorkerProcess } from '../helpers/worker-process';

describe('chaos: the worker is killed in the middle of a batch', () => {
  let gw: TestGateway;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    gw = await startGateway({ taskQueue: `chaos-${randomUUID()}` });
    // Small chunks so the kill lands mid-batch; a short heartbeat timeout so the lost chunk is retried soon.
    Object.assign(gw.deps.batches.settings, { chunkSize: 50, heartbeatTimeoutMs: 2000 });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill('SIGKILL');
    await gw.close();
  });

  it('SIGKILL mid-batch, a new worker finishes it: exactly 5,000 keys, batch_index 1..5000, no duplicates', async () => {
    const started = Date.now();
    const appName = `chaos-worker-${randomUUID().slice(0, 8)}`;
    const first = await spawnWorkerProcess({ taskQueue: gw.taskQueue, appName });
    workers.push(first);
    const { systemToken: auth } = await newAccount(gw.db);
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 5000, name: 'chaos', remain_quota: 1 } });
    expect(res.status).toBe(202);
    const id = res.body.data.id;

    // Once a fifth of the keys exist, hold the batch row locked: the worker's next chunk inserts its keys and
    // then blocks on the progress update, its transaction open. Kill the worker exactly then: that chunk is
    // lost with the process and must be redone, exactly once, by the next worker.
    let atKill = 0;
    for (;;) {
      const { rows } = await gw.db.query('SELECT count(*)::int AS n FROM tokens WHERE batch_id = $1', [id]);
      atKill = rows[0].n;
      if (atKill >= 1000) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    const holder = await gw.db.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM key_batches WHERE id = $1 FOR UPDATE', [id]);
      for (const deadline = Date.now() + 10_000; ;) {
        const { rows } = await gw.db.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE application_name = $1 AND wait_event_type = 'Lock' AND backend_xid IS NOT NULL`,
          [appName],
        );
        if (rows[0].n > 0) break;
        if (Date.now() > deadline) throw new Error('the worker never blocked on the held batch row');
        await new Promise((r) => setTimeout(r, 5));
      }
      first.child.kill('SIGKILL');
      await first.kill('SIGKILL');
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    expect(first.child.signalCode).toBe('SIGKILL');
    const afterKill = (await http(gw.baseUrl, 'GET', `/api/token/batch/${id}`, { auth })).body.data;
    expect(afterKill.status).toBe('running');
    expect(afterKill.created).toBeLessThan(5000);

    const second = await spawnWorkerProcess({ taskQueue: gw.taskQueue });
    workers.push(second);
    const done = await waitForBatch(gw.baseUrl, auth, id, { timeoutMs: 90_000 });
    const elapsed = Date.now() - started;
    process.stdout.write(`[batch-chaos] killed with ${atKill} keys committed and a chunk open; batch completed ${elapsed} ms after the first worker started\n`);
    expect(done).toMatchObject({ status: 'completed', requested: 5000, created: 5000 });

    const { rows } = await gw.db.query(
      `SELECT count(*)::int AS n, count(DISTINCT batch_index)::int AS d, min(batch_index) AS lo, max(batch_index) AS hi,
              count(DISTINCT key_hash)::int AS h, count(DISTINCT name)::int AS names
         FROM tokens WHERE batch_id = $1`,
      [id],
    );
    expect(rows[0]).toEqual({ n: 5000, d: 5000, lo: 1, hi: 5000, h: 5000, names: 5000 });
    const mismatched = await gw.db.query(
      `SELECT count(*)::int AS n FROM tokens WHERE batch_id = $1 AND name <> 'chaos-' || lpad(batch_index::text, 5, '0')`, [id],
    );
    expect(mismatched.rows[0].n).toBe(0);

    // The history shows what happened: the workflow carried on in the same run(s) on the new worker.
    // (The batch row is marked completed by the last activity, just before the workflow itself completes.)
    await gw.temporal.workflow.getHandle(`keys:${id}`).result();
    const runs = await fetchAllRuns(gw.temporal, `keys:${id}`);
    expect(runs.at(-1)!.history.events!.at(-1)!.workflowExecutionCompletedEventAttributes).toBeTruthy();
    const events = runs.flatMap((r) => r.history.events ?? []);
    const retried = events.filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1).length;
    const timedOut = events.filter((e) => e.activityTaskTimedOutEventAttributes || e.workflowTaskTimedOutEventAttributes).length;
    process.stdout.write(`[batch-chaos] history: ${retried} retried activity attempts, ${timedOut} timeouts\n`);
    // The chunk that was open at the kill was redone by the new worker (attempt 2 or later).
    expect(retried).toBeGreaterThanOrEqual(1);
  }, 180_000);
});
