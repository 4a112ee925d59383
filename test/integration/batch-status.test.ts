// test modes: postgres, embedded
import { http, newAccount, startGateway, startWorker, TestGateway } from '../helpers/harness';
import { allBatchKeys, waitForBatch, startBatchStack } from '../helpers/worker-batches';

describe('batch status change (PUT /api/token/batch/{id}?status_only=true)', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let acct: Awaited<ReturnType<typeof newAccount>>;
  let auth: string;

  beforeAll(async () => {
    ({ gw, worker, acct, auth } = await startBatchStack({ chunkSize: 100 }));
  });
  afterAll(async () => {
    await worker.stop();
    await gw.close();
  });

  async function issue(count: number, name: string): Promise<number> {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count, name, remain_quota: 1000 } });
    expect(res.status).toBe(202);
    await waitForBatch(gw.baseUrl, auth, res.body.data.id);
    return res.body.data.id;
  }

  it('disables every key of the batch durably; a disabled key gets 401 on inference at once; enabling restores them', async () => {
    const source = await issue(250, 'st');
    const keys = await allBatchKeys(gw.baseUrl, auth, source);
    // Warm this replica's key cache: the change must evict it, not wait for a TTL.
    const probe = keys[137];
    expect((await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer sk-${probe.key}` })).status).toBe(200);
    await gw.deps.keyAuth.authenticate(`sk-${probe.key}`);

    const res = await http(gw.baseUrl, 'PUT', `/api/token/batch/${source}?status_only=true`, { auth, body: { status: 2 } });
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ kind: 'status', status: 'running', source_batch_id: source, requested: 250, params: { status: 2 } });
    const statusBatch = res.body.data.id;
    expect(statusBatch).not.toBe(source);

    const done = await waitForBatch(gw.baseUrl, auth, statusBatch);
    expect(done).toMatchObject({ status: 'completed', changed: 250, processed: 250, requested: 250 });
    const after = await allBatchKeys(gw.baseUrl, auth, source);
    expect(after.every((k) => k.status === 2)).toBe(true);

    const denied = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer sk-${probe.key}` });
    expect(denied.status).toBe(401);
    expect(denied.body.error.code).toBe('invalid_api_key');
    await expect(gw.deps.keyAuth.authenticate(`sk-${probe.key}`)).rejects.toMatchObject({ status: 401 });

    const enable = await http(gw.baseUrl, 'PUT', `/api/token/batch/${source}?status_only=true`, { auth, body: { status: 1 } });
    expect(enable.status).toBe(202);
    expect(await waitForBatch(gw.baseUrl, auth, enable.body.data.id)).toMatchObject({ status: 'completed', changed: 250 });
    expect((await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer sk-${probe.key}` })).status).toBe(200);

    // A status batch has no keys of its own.
    const ownKeys = await http(gw.baseUrl, 'GET', `/api/token/batch/${statusBatch}/keys`, { auth });
    expect(ownKeys.body.data).toEqual([]);

    const { rows } = await gw.db.query(
      `SELECT action, target_id, details FROM audit_events WHERE account_id = $1 AND action = 'key_batch.status' ORDER BY id`,
      [acct.id],
    );
    expect(rows.map((r) => [r.target_id, r.details.source_batch_id, r.details.status])).toEqual([
      [String(statusBatch), source, 2],
      [String(enable.body.data.id), source, 1],
    ]);
  });

  it('counts only keys it changed and skips deleted ones', async () => {
    const source = await issue(20, 'partial');
    const keys = await allBatchKeys(gw.baseUrl, auth, source);
    await http(gw.baseUrl, 'PUT', '/api/token/?status_only=true', { auth, body: { id: keys[0].id, status: 2 } });
    await http(gw.baseUrl, 'DELETE', `/api/token/${keys[1].id}`, { auth });
    const res = await http(gw.baseUrl, 'PUT', `/api/token/batch/${source}?status_only=true`, { auth, body: { status: 2 } });
    expect(res.body.data.requested).toBe(19);
    const done = await waitForBatch(gw.baseUrl, auth, res.body.data.id);
    expect(done).toMatchObject({ status: 'completed', requested: 19, processed: 19, changed: 18 });
  });

  it('rejects bad input with a 400 naming the field', async () => {
    const source = await issue(1, 'bad');
    const cases: Array<[string, unknown, string]> = [
      [`/api/token/batch/${source}?status_only=true`, { status: 3 }, 'status'],
      [`/api/token/batch/${source}?status_only=true`, { status: '2' }, 'status'],
      [`/api/token/batch/${source}?status_only=true`, {}, 'status'],
      [`/api/token/batch/${source}`, { status: 2 }, 'status_only'],
      [`/api/token/batch/${source}?status_only=maybe`, { status: 2 }, 'status_only'],
    ];
    for (const [path, body, field] of cases) {
      const res = await http(gw.baseUrl, 'PUT', path, { auth, body });
      expect([path, body, res.status]).toEqual([path, body, 400]);
      expect(res.body).toEqual({ success: false, message: expect.stringContaining(field) });
    }
  });

  it('refuses a status change on a running batch (409) and on a status batch (400)', async () => {
    gw.deps.batches.settings.chunkSize = 10;
    try {
      const running = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 3000, name: 'busy' } });
      const id = running.body.data.id;
      const res = await http(gw.baseUrl, 'PUT', `/api/token/batch/${id}?status_only=true`, { auth, body: { status: 2 } });
      expect(res.status).toBe(409);
      expect(res.body.message).toContain('running');
      await http(gw.baseUrl, 'DELETE', `/api/token/batch/${id}`, { auth });
    } finally {
      gw.deps.batches.settings.chunkSize = 100;
    }
    const source = await issue(2, 'meta');
    const st = await http(gw.baseUrl, 'PUT', `/api/token/batch/${source}?status_only=true`, { auth, body: { status: 2 } });
    await waitForBatch(gw.baseUrl, auth, st.body.data.id);
    const onStatus = await http(gw.baseUrl, 'PUT', `/api/token/batch/${st.body.data.id}?status_only=true`, { auth, body: { status: 1 } });
    expect(onStatus.status).toBe(400);
    expect(onStatus.body.message).toContain('status change');
  });
});

describe('a batch that cannot be done', () => {
  it('ends failed, with the error readable through GET and one audit event', async () => {
    const gw = await startGateway();
    const worker = await startWorker(gw);
    try {
      const acct = await newAccount(gw.db);
      // A row the api would never write (a quota that is not a number), started like any other batch:
      // Postgres rejects the insert for what it is, so the workflow fails the batch instead of retrying forever.
      const { rows } = await gw.db.query(
        `INSERT INTO key_batches (account_id, kind, status, requested, params, phase)
         VALUES ($1, 'issue', 'running', 3, $2, 'issuing') RETURNING id, (extract(epoch from started_at) * 1000)::bigint AS ms`,
        [acct.id, JSON.stringify({ name: 'bad', remain_quota: 'lots', unlimited_quota: false, group: '', models: '', expired_time: -1, index_end: 3 })],
      );
      const { createTemporalBatchStarter } = await import('../../src/temporal/batch-starter');
      const starter = createTemporalBatchStarter({ client: gw.temporal, taskQueue: gw.taskQueue });
      await starter.start(
        { kind: 'issue', batchId: rows[0].id, next: 1, end: 3, chunkSize: 10, continueAsNewAfterChunks: 5, heartbeatTimeoutMs: 5000 },
        `${acct.id}:${rows[0].ms}`,
      );
      const failed = await waitForBatch(gw.baseUrl, acct.systemToken, rows[0].id, { timeoutMs: 20_000 });
      expect(failed).toMatchObject({ status: 'failed', created: 0 });
      expect(failed.error).toContain('invalid input syntax');
      expect(failed.finished_time).toBeGreaterThan(0);
      await expect(gw.temporal.workflow.getHandle(`keys:${rows[0].id}`).result()).rejects.toThrow();
      // Both failures are counted for /metrics: the activity attempt and the workflow execution.
      const metrics = await gw.services.api.metrics.registry.metrics();
      expect(metrics).toMatch(/^gateway_activity_failures_total\{activity="issueKeyChunk",kind="non_retryable"\} [1-9]/m);
      expect(metrics).toMatch(/^gateway_workflow_failures_total\{workflow="keysIssueWorkflow",kind="failed"\} 1$/m);
      const audit = await gw.db.query(`SELECT action FROM audit_events WHERE target_id = $1 AND target_type = 'key_batch'`, [String(rows[0].id)]);
      expect(audit.rows.map((r) => r.action)).toEqual(['key_batch.failed']);
      // A start under the same workflow id but for another batch row is refused, not mistaken for this one.
      await expect(
        starter.start({ kind: 'issue', batchId: rows[0].id, next: 1, end: 3, chunkSize: 10, continueAsNewAfterChunks: 5, heartbeatTimeoutMs: 5000 }, 'someone-else'),
      ).rejects.toThrow('belongs to another batch');
    } finally {
      await worker.stop();
      await gw.close();
    }
  });

  it('answers 503 without a workflow engine, and starts nothing', async () => {
    const { buildApp } = await import('../../src/api/app');
    const { createServices } = await import('../../src/runtime/services');
    const { TEST_SECRET } = await import('../helpers/harness');
    const { openTestPool } = await import('../helpers/test-database');
    const database = await openTestPool(2);
    const db = database.pool;
    const services = await createServices({ db, secret: TEST_SECRET, temporal: null });
    const app = await buildApp(services.api, { logLevel: 'silent' });
    try {
      const acct = await newAccount(db);
      const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
      const res = await http(baseUrl, 'POST', '/api/token/batch', { auth: acct.systemToken, body: { count: 1, name: 'x' } });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ success: false, message: expect.stringContaining('workflow engine') });
      const { rows } = await db.query('SELECT count(*)::int AS n FROM key_batches WHERE account_id = $1', [acct.id]);
      expect(rows[0].n).toBe(0);
    } finally {
      await app.close();
      await services.close();
      await database.close();
    }
  });
});
