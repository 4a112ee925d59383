// test modes: postgres, embedded
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer } from '../../src/temporal/dev-server';
import { http, newAccount, startGateway, startWorker, TestGateway } from '../helpers/harness';
import { allBatchKeys, waitForBatch, startBatchStack } from '../helpers/worker-batches';

async function works(gw: TestGateway, key: string): Promise<boolean> {
  const res = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer sk-${key}` });
  if (res.status !== 200 && res.status !== 401) throw new Error(`unexpected ${res.status}`);
  return res.status === 200;
}

describe('batch rotation (POST /api/token/batch/{id}/rotate)', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let acct: Awaited<ReturnType<typeof newAccount>>;
  let auth: string;

  beforeAll(async () => {
    ({ gw, worker, acct, auth } = await startBatchStack({ chunkSize: 50 }));
  });
  afterAll(async () => {
    await worker.stop();
    await gw.close();
  });

  async function issue(count: number, name: string, extra: Record<string, unknown> = {}): Promise<number> {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count, name, remain_quota: 7000, ...extra } });
    expect(res.status).toBe(202);
    await waitForBatch(gw.baseUrl, auth, res.body.data.id);
    return res.body.data.id;
  }

  it('issues one replacement per key, keeps the old keys working through the grace period, then disables them', async () => {
    const expires = Math.floor(Date.now() / 1000) + 7 * 86_400;
    const source = await issue(120, 'rot', { group: 'default', models: 'gpt-4o', expired_time: expires });
    const old = await allBatchKeys(gw.baseUrl, auth, source);
    // Some history on the source: a deleted key gets no replacement, a disabled key a disabled one,
    // an edited key a replacement with the edited settings.
    await http(gw.baseUrl, 'DELETE', `/api/token/${old[5].id}`, { auth });
    await http(gw.baseUrl, 'PUT', '/api/token/?status_only=true', { auth, body: { id: old[6].id, status: 2 } });
    await http(gw.baseUrl, 'PUT', '/api/token/', { auth, body: { ...old[7], name: 'edited', remain_quota: 42, unlimited_quota: true } });

    const res = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 3 } });
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ kind: 'rotate', status: 'running', source_batch_id: source, requested: 119, params: { grace_seconds: 3 } });
    const rot = res.body.data.id;

    const inGrace = await waitForBatch(gw.baseUrl, auth, rot, { until: (b) => b.phase === 'grace' || b.status !== 'running' });
    expect(inGrace).toMatchObject({ status: 'running', phase: 'grace', created: 119 });
    expect(inGrace.grace_ends_time).toBeGreaterThan(Date.now() / 1000);
    const fresh = await allBatchKeys(gw.baseUrl, auth, rot);
    expect(fresh).toHaveLength(119);
    const oldByIndex = new Map(old.map((k, i) => [i + 1, k]));
    for (const k of fresh) {
      // Replacements keep the name (so the index), except index 8, renamed 'edited' before the rotation.
      const idx = k.name === 'edited' ? 8 : Number(k.name.slice(-5));
      const was = oldByIndex.get(idx)!;
      expect(k.key).not.toBe(was.key);
      expect(k.id).not.toBe(was.id);
      if (idx === 8) {
        expect(k).toMatchObject({ name: 'edited', remain_quota: 42, unlimited_quota: true, status: 1 });
      } else {
        expect(k).toMatchObject({
          name: was.name, remain_quota: 7000, unlimited_quota: false, group: 'default', models: 'gpt-4o',
          expired_time: expires, status: idx === 7 ? 2 : 1, batch_id: rot,
        });
      }
    }
    expect(fresh.find((k) => k.name === 'rot-00006')).toBeUndefined();
    // During the grace period both generations work.
    expect(await works(gw, old[0].key)).toBe(true);
    expect(await works(gw, fresh[0].key)).toBe(true);

    const done = await waitForBatch(gw.baseUrl, auth, rot, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: 'completed', phase: 'done', created: 119, changed: 118, processed: 119 });
    expect(done.finished_time).toBeGreaterThanOrEqual(inGrace.grace_ends_time);
    const oldAfter = await allBatchKeys(gw.baseUrl, auth, source);
    expect(oldAfter.every((k) => k.status === 2)).toBe(true);
    expect(await works(gw, old[0].key)).toBe(false);
    expect(await works(gw, fresh[0].key)).toBe(true);

    const { rows } = await gw.db.query(
      `SELECT action, target_id, details FROM audit_events
        WHERE account_id = $1 AND target_type = 'key_batch' AND target_id = $2 ORDER BY id`,
      [acct.id, String(rot)],
    );
    expect(rows.map((r) => r.action)).toEqual(['key_batch.rotate', 'key_batch.completed']);
    expect(rows[0].details).toMatchObject({ source_batch_id: source, grace_seconds: 3 });
  });

  it('cancelled during the grace period, leaves the old keys enabled (replacements remain and are listed)', async () => {
    const source = await issue(40, 'cg');
    const res = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 600 } });
    const rot = res.body.data.id;
    await waitForBatch(gw.baseUrl, auth, rot, { until: (b) => b.phase === 'grace' });
    const del = await http(gw.baseUrl, 'DELETE', `/api/token/batch/${rot}`, { auth });
    expect(del.status).toBe(200);
    expect(del.body.data).toMatchObject({ id: rot, status: 'cancelled', phase: 'grace', created: 40, changed: 0 });
    expect(del.body.data.finished_time).toBeGreaterThan(0);
    expect(del.body.data.note).toContain('stay enabled');
    const old = await allBatchKeys(gw.baseUrl, auth, source);
    expect(old.every((k) => k.status === 1)).toBe(true);
    expect(await works(gw, old[0].key)).toBe(true);
    expect(await allBatchKeys(gw.baseUrl, auth, rot)).toHaveLength(40);

    const again = await http(gw.baseUrl, 'DELETE', `/api/token/batch/${rot}`, { auth });
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe('cancelled');
    const { rows } = await gw.db.query(
      `SELECT action FROM audit_events WHERE account_id = $1 AND target_type = 'key_batch' AND target_id = $2 ORDER BY id`,
      [acct.id, String(rot)],
    );
    expect(rows.map((r) => r.action)).toEqual(['key_batch.rotate', 'key_batch.cancel', 'key_batch.cancelled']);
    // The source is free again once the rotation is over.
    const next = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 0 } });
    expect(next.status).toBe(202);
    expect(await waitForBatch(gw.baseUrl, auth, next.body.data.id)).toMatchObject({ status: 'completed', changed: 40 });
  });

  it('refuses a second rotation or status change while one runs (409), and bad grace_seconds (400)', async () => {
    const source = await issue(5, 'two');
    const first = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 600 } });
    expect(first.status).toBe(202);
    const second = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 0 } });
    expect(second.status).toBe(409);
    expect(second.body.message).toContain(String(first.body.data.id));
    const status = await http(gw.baseUrl, 'PUT', `/api/token/batch/${source}?status_only=true`, { auth, body: { status: 2 } });
    expect(status.status).toBe(409);
    await http(gw.baseUrl, 'DELETE', `/api/token/batch/${first.body.data.id}`, { auth });

    for (const body of [{ grace_seconds: -1 }, { grace_seconds: 1e9 }, { grace_seconds: 'soon' }, { grace_seconds: 1.5 }, {}]) {
      const res = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body });
      expect([body, res.status]).toEqual([body, 400]);
      expect(res.body.message).toContain('grace_seconds');
    }
  });

  it('rotates idempotently with an Idempotency-Key', async () => {
    const source = await issue(3, 'idr');
    const headers = { 'idempotency-key': `rot-${Date.now()}` };
    const a = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 0 }, headers });
    const b = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 0 }, headers });
    expect(a.status).toBe(202);
    expect(b.status).toBe(200);
    expect(b.body.data.id).toBe(a.body.data.id);
    const c = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: 1 }, headers });
    expect(c.status).toBe(409);
    await waitForBatch(gw.baseUrl, auth, a.body.data.id);
  });
});

describe('rotation across a restart of everything', () => {
  it('a durable grace timer: Temporal, worker and api all restart during the grace period; the old keys are disabled on time', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gateway-rot-'));
    const dbFilename = path.join(dataDir, 'temporal.db');
    const embeddedDataDir = path.join(dataDir, 'pg');
    const savedAddress = process.env.GATEWAY_TEST_TEMPORAL_ADDRESS;
    let server = await startDevServer({ dbFilename });
    const taskQueue = `rot-restart-${Date.now()}`;
    let gw: TestGateway | undefined;
    let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
    try {
      process.env.GATEWAY_TEST_TEMPORAL_ADDRESS = server.address;
      gw = await startGateway({ taskQueue, embeddedDataDir });
      worker = await startWorker(gw);
      const { systemToken: auth } = await newAccount(gw.db);
      const issued = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 10, name: 'rs', remain_quota: 1 } });
      await waitForBatch(gw.baseUrl, auth, issued.body.data.id);
      const rotate = await http(gw.baseUrl, 'POST', `/api/token/batch/${issued.body.data.id}/rotate`, { auth, body: { grace_seconds: 6 } });
      const rot = rotate.body.data.id;
      const inGrace = await waitForBatch(gw.baseUrl, auth, rot, { until: (b) => b.phase === 'grace' });

      await worker.stop();
      worker = undefined;
      await gw.close();
      gw = undefined;
      await server.shutdown();
      server = await startDevServer({ dbFilename });
      process.env.GATEWAY_TEST_TEMPORAL_ADDRESS = server.address;
      gw = await startGateway({ taskQueue, embeddedDataDir });
      worker = await startWorker(gw);

      const afterRestart = await http(gw.baseUrl, 'GET', `/api/token/batch/${rot}`, { auth });
      expect(afterRestart.body.data).toMatchObject({ status: 'running', phase: 'grace' });
      const done = await waitForBatch(gw.baseUrl, auth, rot, { timeoutMs: 30_000 });
      expect(done).toMatchObject({ status: 'completed', changed: 10 });
      expect(done.finished_time).toBeGreaterThanOrEqual(inGrace.grace_ends_time);
      const old = await allBatchKeys(gw.baseUrl, auth, issued.body.data.id);
      expect(old.every((k) => k.status === 2)).toBe(true);
    } finally {
      await worker?.stop();
      await gw?.close();
      await server.shutdown();
      process.env.GATEWAY_TEST_TEMPORAL_ADDRESS = savedAddress;
    }
  }, 90_000);
});
