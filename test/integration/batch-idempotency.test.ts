// test modes: postgres, embedded
import { randomUUID } from 'node:crypto';
import type { BatchWorkflowStarter } from '../../src/domain/keys/batches';
import { http, newAccount, startGateway, startWorker, TestGateway } from '../helpers/harness';
import { waitForBatch, startBatchStack } from '../helpers/worker-batches';

/** Retries of one request (the CLI repeats 502/503/504 with the same Idempotency-Key) must never fork a rollout. */
describe('batch Idempotency-Key under concurrent retries', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let acct: Awaited<ReturnType<typeof newAccount>>;
  let auth: string;

  beforeAll(async () => {
    ({ gw, worker, acct, auth } = await startBatchStack());
  });
  afterAll(async () => {
    await worker.stop();
    await gw.close();
  });

  async function issue(count: number, name: string): Promise<number> {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count, name, remain_quota: 10 } });
    expect(res.status).toBe(202);
    await waitForBatch(gw.baseUrl, auth, res.body.data.id);
    return res.body.data.id;
  }

  async function expectOneBatch(source: number, responses: { status: number; body: any }[], kind: string) {
    // Every retry is answered as the replay of the one that won: no 409 "already has a running batch".
    expect(responses.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 202]);
    const ids = new Set(responses.map((r) => r.body.data.id));
    expect(ids.size).toBe(1);
    const id = [...ids][0] as number;
    const rows = await gw.db.query('SELECT id FROM key_batches WHERE source_batch_id = $1', [source]);
    expect(rows.rows.map((r) => r.id)).toEqual([id]);
    const audit = await gw.db.query(
      `SELECT count(*)::int AS n FROM audit_events WHERE account_id = $1 AND action = $2 AND target_id = $3`,
      [acct.id, `key_batch.${kind}`, String(id)],
    );
    expect(audit.rows[0].n).toBe(1);
    // One workflow, keys:<id>, and it runs the batch to the end.
    const desc = await gw.temporal.workflow.getHandle(`keys:${id}`).describe();
    expect(desc.workflowId).toBe(`keys:${id}`);
    return id;
  }

  it('5 parallel identical PUT status_only calls with one Idempotency-Key start one batch and all name it', async () => {
    const source = await issue(4, 'idem-st');
    const headers = { 'idempotency-key': `st-${randomUUID()}` };
    const all = await Promise.all(
      Array.from({ length: 5 }, () =>
        http(gw.baseUrl, 'PUT', `/api/token/batch/${source}?status_only=true`, { auth, body: { status: 2 }, headers }),
      ),
    );
    const id = await expectOneBatch(source, all, 'status');
    expect(await waitForBatch(gw.baseUrl, auth, id)).toMatchObject({ status: 'completed', changed: 4 });
  });

  it('5 parallel identical rotations with one Idempotency-Key start one batch and all name it', async () => {
    const source = await issue(4, 'idem-rot');
    const headers = { 'idempotency-key': `rot-${randomUUID()}` };
    const all = await Promise.all(
      Array.from({ length: 5 }, () =>
        http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 0 }, headers }),
      ),
    );
    const id = await expectOneBatch(source, all, 'rotate');
    expect(await waitForBatch(gw.baseUrl, auth, id)).toMatchObject({ status: 'completed', created: 4, changed: 4 });
  });
});

/** A starter whose first `failures` starts throw as an unreachable Temporal would. */
function flakyStarter(failures: number) {
  const calls = { start: 0, failed: 0 };
  const wrap = (real: BatchWorkflowStarter): BatchWorkflowStarter => ({
    async start(plan, owner) {
      calls.start++;
      if (calls.failed < failures) {
        calls.failed++;
        throw new Error('14 UNAVAILABLE: No connection established');
      }
      return real.start(plan, owner);
    },
    cancel: (id) => real.cancel(id),
  });
  return { calls, wrap };
}

describe('a workflow engine that is briefly unreachable when a batch starts', () => {
  it('answers 503 and leaves the batch running; the same Idempotency-Key starts it and it completes', async () => {
    const flaky = flakyStarter(1);
    const gw = await startGateway({ batchStarter: flaky.wrap });
    const worker = await startWorker(gw);
    try {
      const { systemToken: auth } = await newAccount(gw.db);
      const headers = { 'idempotency-key': `outage-${randomUUID()}` };
      const body = { count: 7, name: 'outage', remain_quota: 5 };
      const first = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body, headers });
      expect(first.status).toBe(503);
      expect(first.body).toEqual({ success: false, message: expect.stringContaining('Idempotency-Key') });
      const rows = await gw.db.query('SELECT id, status, created FROM key_batches WHERE idempotency_key = $1', [headers['idempotency-key']]);
      expect(rows.rows).toHaveLength(1);
      expect(rows.rows[0]).toMatchObject({ status: 'running', created: 0 });
      expect(first.body.message).toContain(`batch ${rows.rows[0].id}`);

      // The CLI's retry: same key, same body. The workflow starts now and the batch is not a failure.
      const retry = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body, headers });
      expect(retry.status).toBe(200);
      expect(retry.body.data).toMatchObject({ id: rows.rows[0].id, status: 'running' });
      const done = await waitForBatch(gw.baseUrl, auth, rows.rows[0].id);
      expect(done).toMatchObject({ status: 'completed', created: 7, error: null });
      expect(flaky.calls.failed).toBe(1);
    } finally {
      await worker.stop();
      await gw.close();
    }
  });

  it('without an Idempotency-Key, GET of the batch named in the 503 starts it', async () => {
    const flaky = flakyStarter(1);
    const gw = await startGateway({ batchStarter: flaky.wrap });
    const worker = await startWorker(gw);
    try {
      const { systemToken: auth } = await newAccount(gw.db);
      const first = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 3, name: 'nokey' } });
      expect(first.status).toBe(503);
      const id = Number(/batch (\d+)/.exec(first.body.message)?.[1]);
      expect(id).toBeGreaterThan(0);
      const got = await http(gw.baseUrl, 'GET', `/api/token/batch/${id}`, { auth });
      expect(got.status).toBe(200);
      expect(got.body.data).toMatchObject({ id, status: 'running' });
      expect(await waitForBatch(gw.baseUrl, auth, id)).toMatchObject({ status: 'completed', created: 3 });
    } finally {
      await worker.stop();
      await gw.close();
    }
  });
});
