// test modes: postgres, embedded
import { batchWorkflowId } from '../../src/domain/keys/batch-plan';
import { TIDY_AFTER_KEYS, tidyAfterBatch } from '../../src/domain/keys/batch-steps';
import { http, newAccount, startWorker, TestGateway } from '../helpers/harness';
import { openTestPool } from '../helpers/test-database';
import { waitFor } from '../helpers/wait';
import { allBatchKeys, waitForBatch, startBatchStack } from '../helpers/worker-batches';
import { createRepositories } from '../../src/db/repositories';

describe('batch issuance (POST /api/token/batch)', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let auth: string;

  beforeAll(async () => {
    ({ gw, worker, auth } = await startBatchStack({ chunkSize: 100 }));
  });
  afterAll(async () => {
    await worker.stop();
    await gw.close();
  });

  it('issues exactly count keys named <prefix>-00001.. with the given settings, visible while running and after', async () => {
    const expires = Math.floor(Date.now() / 1000) + 86_400;
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', {
      auth,
      body: { count: 250, name: 'team', remain_quota: 500_000, unlimited_quota: false, group: 'default', models: 'gpt-4o,gpt-4o-mini', expired_time: expires },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      success: true,
      message: '',
      data: expect.objectContaining({ id: expect.any(Number), kind: 'issue', status: 'running', requested: 250, created: 0 }),
    });
    const id = res.body.data.id;
    const done = await waitForBatch(gw.baseUrl, auth, id);
    expect(done).toMatchObject({ id, status: 'completed', requested: 250, created: 250, phase: 'done', error: null });
    expect(done.started_time).toBeGreaterThan(0);
    expect(done.finished_time).toBeGreaterThanOrEqual(done.started_time);

    const keys = await allBatchKeys(gw.baseUrl, auth, id);
    expect(keys).toHaveLength(250);
    expect(keys.map((k) => k.name)).toEqual(Array.from({ length: 250 }, (_, i) => `team-${String(i + 1).padStart(5, '0')}`));
    expect(new Set(keys.map((k) => k.key)).size).toBe(250);
    for (const k of keys) {
      expect(k).toMatchObject({
        status: 1, remain_quota: 500_000, unlimited_quota: false, group: 'default', models: 'gpt-4o,gpt-4o-mini',
        expired_time: expires, batch_id: id,
      });
      expect(k.key).toMatch(/^[A-Za-z0-9]{48}$/);
    }
    const { rows } = await gw.db.query('SELECT count(*)::int AS n, count(DISTINCT batch_index)::int AS d, min(batch_index) AS lo, max(batch_index) AS hi FROM tokens WHERE batch_id = $1', [id]);
    expect(rows[0]).toEqual({ n: 250, d: 250, lo: 1, hi: 250 });
  });

  it('pages the keys like the key list, with X-Total-Count', async () => {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 25, name: 'paged', remain_quota: 1 } });
    const id = res.body.data.id;
    await waitForBatch(gw.baseUrl, auth, id);
    const page2 = await http(gw.baseUrl, 'GET', `/api/token/batch/${id}/keys?p=2&page_size=10`, { auth });
    expect(page2.status).toBe(200);
    expect(page2.headers.get('x-total-count')).toBe('25');
    expect(page2.body.data.map((k: any) => k.name)).toEqual(Array.from({ length: 10 }, (_, i) => `paged-${String(i + 11).padStart(5, '0')}`));
    const bad = await http(gw.baseUrl, 'GET', `/api/token/batch/${id}/keys?page_size=1000`, { auth });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('page_size');
  });

  it('streams the issued keys as CSV and JSONL, in issue order, to their owner only', async () => {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 12, name: '=team', remain_quota: 7 } });
    const id = res.body.data.id;
    await waitForBatch(gw.baseUrl, auth, id);
    const listed = await allBatchKeys(gw.baseUrl, auth, id);
    const csv = await fetch(`${gw.baseUrl}/api/token/batch/${id}/keys.csv`, { headers: { authorization: auth } });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="batch-${id}-keys.csv"`);
    expect(csv.headers.get('cache-control')).toBe('no-store');
    const lines = (await csv.text()).trimEnd().split('\n');
    expect(lines[0]).toBe('id,name,key,group,status,remain_quota,unlimited_quota,expired_time');
    expect(lines.slice(1)).toEqual(listed.map((k) => `${k.id},'${k.name},sk-${k.key},,1,7,false,-1`));
    const jsonl = await fetch(`${gw.baseUrl}/api/token/batch/${id}/keys.jsonl`, { headers: { authorization: auth } });
    const rows = (await jsonl.text()).trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(rows.map((r) => r.key)).toEqual(listed.map((k) => `sk-${k.key}`));
    expect(rows[0]).toEqual({ id: listed[0].id, name: '=team-00001', key: `sk-${listed[0].key}`, group: '', status: 1, remain_quota: 7, unlimited_quota: false, expired_time: -1 });
    const other = await newAccount(gw.db);
    const hidden = await http(gw.baseUrl, 'GET', `/api/token/batch/${id}/keys.csv`, { auth: other.systemToken });
    expect([hidden.status, hidden.body.success]).toEqual([404, false]);
  });

  it('lists the account batches, newest first, paged', async () => {
    const other = await newAccount(gw.db);
    const a = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth: other.systemToken, body: { count: 1, name: 'l1' } });
    const b = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth: other.systemToken, body: { count: 1, name: 'l2' } });
    const list = await http(gw.baseUrl, 'GET', '/api/token/batch/?p=1&page_size=10', { auth: other.systemToken });
    expect(list.status).toBe(200);
    expect(list.headers.get('x-total-count')).toBe('2');
    expect(list.body.data.map((x: any) => x.id)).toEqual([b.body.data.id, a.body.data.id]);
    const noSlash = await http(gw.baseUrl, 'GET', '/api/token/batch?page_size=1', { auth: other.systemToken });
    expect(noSlash.body.data.map((x: any) => x.id)).toEqual([b.body.data.id]);
  });

  it('with the same Idempotency-Key returns the same batch and never starts a second one; another body is a 409', async () => {
    const key = `idem-${Date.now()}`;
    const body = { count: 30, name: 'idem', remain_quota: 10 };
    const first = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body, headers: { 'idempotency-key': key } });
    expect(first.status).toBe(202);
    const again = await Promise.all(
      [1, 2, 3].map(() => http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body, headers: { 'idempotency-key': key } })),
    );
    for (const r of again) {
      expect(r.status).toBe(200);
      expect(r.body.data.id).toBe(first.body.data.id);
    }
    const done = await waitForBatch(gw.baseUrl, auth, first.body.data.id);
    expect(done.created).toBe(30);
    const afterDone = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body, headers: { 'idempotency-key': key } });
    expect(afterDone.status).toBe(200);
    expect(afterDone.body.data).toMatchObject({ id: first.body.data.id, status: 'completed', created: 30 });

    const { rows } = await gw.db.query('SELECT count(*)::int AS n FROM key_batches WHERE idempotency_key = $1', [key]);
    expect(rows[0].n).toBe(1);
    expect((await allBatchKeys(gw.baseUrl, auth, first.body.data.id)).length).toBe(30);

    const conflict = await http(gw.baseUrl, 'POST', '/api/token/batch', {
      auth, body: { ...body, count: 31 }, headers: { 'idempotency-key': key },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({ success: false, message: expect.stringContaining('Idempotency-Key') });

    // Idempotency keys are per account: another account may use the same one.
    const other = await newAccount(gw.db);
    const theirs = await http(gw.baseUrl, 'POST', '/api/token/batch', {
      auth: other.systemToken, body, headers: { 'idempotency-key': key },
    });
    expect(theirs.status).toBe(202);
    expect(theirs.body.data.id).not.toBe(first.body.data.id);
  });

  it('concurrent first requests with one Idempotency-Key create one batch', async () => {
    const key = `race-${Date.now()}`;
    const body = { count: 5, name: 'race' };
    const all = await Promise.all(
      Array.from({ length: 6 }, () => http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body, headers: { 'idempotency-key': key } })),
    );
    const ids = new Set(all.map((r) => r.body.data.id));
    expect(ids.size).toBe(1);
    expect(all.filter((r) => r.status === 202)).toHaveLength(1);
    const done = await waitForBatch(gw.baseUrl, auth, [...ids][0]);
    expect(done.created).toBe(5);
  });

  it('cancels a running batch: keys already made stay and are listed, no more are made', async () => {
    gw.deps.batches.settings.chunkSize = 50;
    let id: number;
    try {
      const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 5000, name: 'cx' } });
      id = res.body.data.id;
    } finally {
      gw.deps.batches.settings.chunkSize = 100;
    }
    const midway = await waitForBatch(gw.baseUrl, auth, id, { until: (b) => b.created >= 200, intervalMs: 20 });
    expect(midway.status).toBe('running');
    const del = await http(gw.baseUrl, 'DELETE', `/api/token/batch/${id}`, { auth });
    expect(del.status).toBe(200);
    expect(del.body.data).toMatchObject({ id, status: 'cancelled' });
    expect(del.body.data.note).toContain('remain');
    const created = del.body.data.created;
    expect(created).toBeGreaterThanOrEqual(200);
    expect(created).toBeLessThan(5000);
    // No chunk can land any more once the workflow has closed and the worker runs no activity.
    await waitFor(
      async () =>
        (await gw.temporal.workflow.getHandle(batchWorkflowId(id)).describe()).status.name !== 'RUNNING' &&
        worker.worker.getStatus().numInFlightActivities === 0,
      { message: `the workflow of batch ${id} to close` },
    );
    const { rows } = await gw.db.query(
      'SELECT count(*)::int AS n, min(batch_index) AS lo, max(batch_index) AS hi FROM tokens WHERE batch_id = $1', [id],
    );
    expect(rows[0]).toEqual({ n: created, lo: 1, hi: created });
    const listed = await http(gw.baseUrl, 'GET', `/api/token/batch/${id}/keys?page_size=1`, { auth });
    expect(listed.headers.get('x-total-count')).toBe(String(created));
    expect((await http(gw.baseUrl, 'GET', `/api/token/batch/${id}`, { auth })).body.data).toMatchObject({ status: 'cancelled', created });

    const done = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 1, name: 'fin' } });
    await waitForBatch(gw.baseUrl, auth, done.body.data.id);
    const late = await http(gw.baseUrl, 'DELETE', `/api/token/batch/${done.body.data.id}`, { auth });
    expect(late.status).toBe(409);
    expect(late.body.message).toContain('completed');
  });

  it.each([
    [{ name: 'x' }, 'count'],
    [{ count: 0, name: 'x' }, 'count'],
    [{ count: 1_000_001, name: 'x' }, 'count'],
    [{ count: 'x', name: 'x' }, 'count'],
    [{ count: 1.5, name: 'x' }, 'count'],
    [{ count: 1 }, 'name'],
    [{ count: 1, name: '' }, 'name'],
    [{ count: 1, name: 'x', remain_quota: -1 }, 'remain_quota'],
    [{ count: 1, name: 'x', unlimited_quota: 'yes' }, 'unlimited_quota'],
    [{ count: 1, name: 'x', expired_time: 1_000 }, 'expired_time'],
    [{ count: 1, name: 'x', expired_time: Date.now() + 86_400_000 }, 'expired_time'],
  ])('rejects %j with a 400 naming %s', async (body, field) => {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, message: expect.stringContaining(field) });
  });

  it('needs a system token and hides other accounts\' batches', async () => {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 2, name: 'mine' } });
    const id = res.body.data.id;
    await waitForBatch(gw.baseUrl, auth, id);
    const noAuth = await http(gw.baseUrl, 'GET', `/api/token/batch/${id}`);
    expect(noAuth.status).toBe(401);
    expect(noAuth.body.success).toBe(false);
    const other = await newAccount(gw.db);
    for (const [method, path, body] of [
      ['GET', `/api/token/batch/${id}`, undefined],
      ['GET', `/api/token/batch/${id}/keys`, undefined],
      ['DELETE', `/api/token/batch/${id}`, undefined],
      ['PUT', `/api/token/batch/${id}?status_only=true`, { status: 2 }],
      ['POST', `/api/token/batch/${id}/rotate`, { grace_seconds: 0 }],
    ] as const) {
      const r = await http(gw.baseUrl, method, path, { auth: other.systemToken, body });
      expect([method, path, r.status]).toEqual([method, path, 404]);
      expect(r.body).toEqual({ success: false, message: expect.stringContaining('not found') });
    }
    const missing = await http(gw.baseUrl, 'GET', '/api/token/batch/999999999', { auth });
    expect(missing.status).toBe(404);
    const badId = await http(gw.baseUrl, 'GET', '/api/token/batch/abc', { auth });
    expect(badId.status).toBe(400);
    expect(badId.body.message).toContain('id');
  });

  it('records one audit event per batch action, with the batch id, and none per key', async () => {
    const acct = await newAccount(gw.db);
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth: acct.systemToken, body: { count: 120, name: 'aud' } });
    const id = res.body.data.id;
    await waitForBatch(gw.baseUrl, acct.systemToken, id);
    const { rows } = await gw.db.query(
      `SELECT action, target_type, target_id, details FROM audit_events
        WHERE account_id = $1 AND (target_type = 'key_batch' OR action LIKE 'token.%') ORDER BY id`, [acct.id],
    );
    expect(rows.map((r) => [r.action, r.target_type, r.target_id])).toEqual([
      ['key_batch.create', 'key_batch', String(id)],
      ['key_batch.completed', 'key_batch', String(id)],
    ]);
    expect(rows[0].details).toMatchObject({ kind: 'issue', requested: 120, name: 'aud' });
    expect(rows[1].details).toMatchObject({ created: 120 });
  });

  it('issues normal keys: they read, update and delete through /api/token/* and authenticate on inference', async () => {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 3, name: 'normal', remain_quota: 1000 } });
    const id = res.body.data.id;
    await waitForBatch(gw.baseUrl, auth, id);
    const [k1, k2, k3] = await allBatchKeys(gw.baseUrl, auth, id);

    const one = await http(gw.baseUrl, 'GET', `/api/token/${k1.id}`, { auth });
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ id: k1.id, key: k1.key, name: 'normal-00001', batch_id: id });

    const upd = await http(gw.baseUrl, 'PUT', '/api/token/', { auth, body: { ...one.body.data, name: 'renamed', remain_quota: 5 } });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ name: 'renamed', remain_quota: 5 });

    const principal = await gw.deps.keyAuth.authenticate(`sk-${k2.key}`);
    expect(principal.tokenId).toBe(k2.id);
    const models = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer sk-${k2.key}` });
    expect(models.status).not.toBe(401);

    const del = await http(gw.baseUrl, 'DELETE', `/api/token/${k3.id}`, { auth });
    expect(del.status).toBe(200);
    const after = await allBatchKeys(gw.baseUrl, auth, id);
    expect(after.map((k) => k.id)).toEqual([k1.id, k2.id]);
  });

  it('leaves POST /api/token/ alone: count is ignored there and one key is created', async () => {
    const res = await http(gw.baseUrl, 'POST', '/api/token/', { auth, body: { name: 'single', count: 5, remain_quota: 1 } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'single', batch_id: null });
  });

  it('a large batch tidies the keys table when it ends, unless another large issue batch is still writing', async () => {
    // A database of its own: other test files' batches would be writing in the shared one.
    const database = await openTestPool(2, { scratch: true });
    const db = database.pool;
    try {
      const { id: accountId } = await newAccount(db);
      const batch = async (created: number, progressedSecondsAgo: number) =>
        (await db.query<{ id: number }>(
          `INSERT INTO key_batches (account_id, kind, status, requested, created, phase, progressed_at)
           VALUES ($1, 'issue', 'running', $2, $2, 'issuing', now() - make_interval(secs => $3)) RETURNING id`,
          [accountId, created, progressedSecondsAgo],
        )).rows[0].id;
      const phase = async (id: number) => (await db.query('SELECT phase FROM key_batches WHERE id = $1', [id])).rows[0].phase;
      const end = (id: number, status = 'completed') => db.query('UPDATE key_batches SET status = $2 WHERE id = $1', [id, status]);

      // Too small to tidy at all.
      const small = await batch(TIDY_AFTER_KEYS - 1, 0);
      expect(await tidyAfterBatch(createRepositories(db), small)).toBe(false);
      await end(small);
      // Another large batch wrote a chunk a moment ago: the VACUUM is left to it; once it says tidying, it runs it.
      const ending = await batch(TIDY_AFTER_KEYS, 0);
      const writing = await batch(TIDY_AFTER_KEYS, 0);
      expect(await tidyAfterBatch(createRepositories(db), ending)).toBe(false);
      expect(await phase(ending)).toBe('tidying');
      expect(await tidyAfterBatch(createRepositories(db), writing)).toBe(true);
      await end(ending);
      await end(writing);
      // A batch that last wrote an hour ago (its worker gone) is not waited for.
      const stalled = await batch(TIDY_AFTER_KEYS, 3600);
      const last = await batch(TIDY_AFTER_KEYS, 0);
      expect(await tidyAfterBatch(createRepositories(db), last)).toBe(true);
      await end(last);
      await end(stalled, 'cancelled');
    } finally {
      await database.close();
    }
  });
});
