import type { AuditEntry, AuditRepository } from '../../src/domain/ports/audit';
import type { KeyBatchRepository, KeyBatchRow, KeyRepository } from '../../src/domain/ports/keys';
import type { Transactions, Tx } from '../../src/domain/ports/transactions';
import { ConflictError, NotFoundError, UnavailableError } from '../../src/domain/errors';
import type { BatchPlan } from '../../src/domain/keys/batch-plan';
import { createBatchService, BatchWorkflowConflictError, type BatchWorkflowStarter } from '../../src/domain/keys/batches';
import { finishBatch, issueKeyChunk, setKeyStatusChunk } from '../../src/domain/keys/batch-steps';
import type { KeyChangeBus } from '../../src/domain/keys/key-change-bus';
import { KeyCipher } from '../../src/domain/keys/key-material';
import { SEALED_KEY_BYTES, type KeySealer } from '../../src/domain/keys/key-sealer';

/**
 * Key rollouts alone (the batch service and the steps its workflow runs), over in-memory repositories and a
 * recording workflow starter: idempotency by Idempotency-Key, a workflow engine that cannot be reached, the
 * checks on a source batch, retried chunks that change nothing twice, and an end recorded once.
 */

interface MemKey {
  id: number;
  user_id: number;
  batch_id: number;
  batch_index: number;
  status: number;
}

function memoryKeys() {
  let nextBatch = 1;
  let nextKey = 1;
  const batches = new Map<number, KeyBatchRow & { idempotency_key: string | null }>();
  const keys: MemKey[] = [];
  const audit: AuditEntry[] = [];

  const keyBatches: Partial<KeyBatchRepository> = {
    async owned(accountId, id) {
      const b = batches.get(id);
      return b && b.account_id === accountId ? { ...b } : null;
    },
    async byIdempotencyKey(accountId, key) {
      return [...batches.values()].find((b) => b.account_id === accountId && b.idempotency_key === key) ?? null;
    },
    async lockIdempotencyKey() {},
    async insert(b) {
      if (b.idempotencyKey !== null && [...batches.values()].some((x) => x.account_id === b.accountId && x.idempotency_key === b.idempotencyKey)) return null;
      const row = {
        id: nextBatch++, account_id: b.accountId, kind: b.kind, status: 'running' as const, phase: b.phase, requested: b.requested, created: 0, changed: 0,
        processed: 0, source_batch_id: b.sourceBatchId, params: b.params, request_hash: b.requestHash, error: null, workflow_started: false,
        started_ms: Date.now(), finished_ms: null, grace_ends_ms: null, idempotency_key: b.idempotencyKey,
      };
      batches.set(row.id, row);
      return { ...row };
    },
    async runningOnSource(sourceId) {
      const b = [...batches.values()].find((x) => x.source_batch_id === sourceId && x.status === 'running' && x.kind !== 'issue');
      return b ? { id: b.id, kind: b.kind } : null;
    },
    async markWorkflowStarted(id) {
      batches.get(id)!.workflow_started = true;
    },
    async endRunning(id, status, error) {
      const b = batches.get(id)!;
      if (b.status === 'running') Object.assign(b, { status, error, finished_ms: Date.now() });
    },
    async step(id) {
      const b = batches.get(id);
      return b ? { account_id: b.account_id, kind: b.kind, status: b.status, params: b.params } : null;
    },
    async addCreated(id, n) {
      const b = batches.get(id)!;
      b.created += n;
      return b.created;
    },
    async addStatusChunk(r) {
      const b = batches.get(r.batchId)!;
      b.changed += r.changed;
      b.processed = keys.filter((k) => k.batch_id === r.sourceBatchId && k.batch_index <= r.to).length;
      return b.processed;
    },
    async finish(id, status, error) {
      const b = batches.get(id)!;
      if (b.status !== 'running') return null;
      Object.assign(b, { status, error, finished_ms: Date.now() });
      return { account_id: b.account_id, kind: b.kind, status, created: b.created, changed: b.changed, requested: b.requested, source_batch_id: b.source_batch_id };
    },
    async counts(id) {
      const b = batches.get(id);
      return b ? { status: b.status, created: b.created, changed: b.changed } : null;
    },
  };
  const keyRepo: Partial<KeyRepository> = {
    async batchKeyCount(batchId, accountId) {
      const mine = keys.filter((k) => k.batch_id === batchId && k.user_id === accountId);
      return { n: mine.length, end: Math.max(0, ...mine.map((k) => k.batch_index)) };
    },
    async insertRange(blob, r) {
      expect(blob.length).toBe((r.to - r.from + 1) * SEALED_KEY_BYTES);
      let inserted = 0;
      for (let i = r.from; i <= r.to; i++) {
        if (keys.some((k) => k.batch_id === r.batchId && k.batch_index === i)) continue;
        keys.push({ id: nextKey++, user_id: r.userId, batch_id: r.batchId, batch_index: i, status: 1 });
        inserted++;
      }
      return inserted;
    },
    async setBatchRangeStatus(r) {
      const hit = keys.filter((k) => k.batch_id === r.batchId && k.user_id === r.accountId && k.batch_index >= r.from && k.batch_index <= r.to && k.status !== r.status);
      for (const k of hit) k.status = r.status;
      return hit.map((k) => k.id);
    },
  };
  const auditRepo: Partial<AuditRepository> = {
    async record(entry) {
      audit.push(entry);
    },
  };
  const transactions: Transactions = { run: (work) => work({ __brand: 'Tx' } as Tx) };
  const repos = { keys: keyRepo as KeyRepository, keyBatches: keyBatches as KeyBatchRepository, audit: auditRepo as AuditRepository, transactions };
  return { repos, batches, keys, audit };
}

function recordingStarter() {
  const started: BatchPlan[] = [];
  const cancelled: number[] = [];
  let failWith: Error | null = null;
  const starter: BatchWorkflowStarter = {
    async start(plan) {
      if (failWith) throw failWith;
      started.push(plan);
    },
    async cancel(id) {
      cancelled.push(id);
      return false;
    },
  };
  return { starter, started, cancelled, fail: (err: Error | null) => (failWith = err) };
}

const cipher = new KeyCipher('unit-test-secret-of-enough-length-000000');
const sealer: KeySealer = { seal: async (n) => Buffer.alloc(n * SEALED_KEY_BYTES, 7), close: async () => {} } as KeySealer;
const noChanges: KeyChangeBus = { publish: async (_tx, ids) => ({ tokenIds: typeof ids === 'number' ? [ids] : [...ids] }), afterCommit: async () => {}, close: async () => {} };
const ISSUE = { name: 'rollout', remain_quota: 1000, unlimited_quota: false, group: '', models: '', expired_time: -1 };

function service(mem: ReturnType<typeof memoryKeys>, starter: BatchWorkflowStarter | null) {
  return createBatchService({ repos: mem.repos, tokens: { list: async () => ({ items: [], total: 0 }) }, cipher, starter, settings: { cancelWaitMs: 50 } });
}

describe('key rollouts over in-memory repositories', () => {
  test('an issue records the batch, audits it and starts its workflow; the same Idempotency-Key replays it', async () => {
    const mem = memoryKeys();
    const wf = recordingStarter();
    const svc = service(mem, wf.starter);
    const first = await svc.issue(1, { ...ISSUE, count: 25_000 }, { idempotencyKey: 'k1', requestId: 'r1' });
    expect(first).toMatchObject({ replayed: false, batch: { kind: 'issue', status: 'running', requested: 25_000, note: null } });
    expect(wf.started).toEqual([expect.objectContaining({ kind: 'issue', batchId: first.batch.id, end: 25_000, next: 1 })]);
    expect(mem.audit).toEqual([expect.objectContaining({ accountId: 1, action: 'key_batch.create', targetId: first.batch.id, requestId: 'r1' })]);

    const again = await svc.issue(1, { ...ISSUE, count: 25_000 }, { idempotencyKey: 'k1' });
    expect(again).toMatchObject({ replayed: true, batch: { id: first.batch.id } });
    expect(mem.batches.size).toBe(1);
    await expect(svc.issue(1, { ...ISSUE, count: 3 }, { idempotencyKey: 'k1' })).rejects.toBeInstanceOf(ConflictError);
    // Another account's batch reads as absent.
    await expect(svc.get(2, first.batch.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  test('a workflow engine out of reach leaves the batch running, unstarted (a 503); reading it later starts it', async () => {
    const mem = memoryKeys();
    const wf = recordingStarter();
    const svc = service(mem, wf.starter);
    wf.fail(new Error('connection refused'));
    await expect(svc.issue(1, { ...ISSUE, count: 10 })).rejects.toBeInstanceOf(UnavailableError);
    const [row] = mem.batches.values();
    expect(row).toMatchObject({ status: 'running', workflow_started: false });
    expect((await svc.get(1, row.id)).note).toMatch(/^not started yet/);

    wf.fail(null);
    expect((await svc.get(1, row.id)).note).toBeNull();
    expect(wf.started).toHaveLength(1);
  });

  test("a workflow id taken by another database's batch fails the batch for good", async () => {
    const mem = memoryKeys();
    const wf = recordingStarter();
    wf.fail(new BatchWorkflowConflictError('keys:1 belongs to another batch'));
    await expect(service(mem, wf.starter).issue(1, { ...ISSUE, count: 10 })).rejects.toBeInstanceOf(UnavailableError);
    expect([...mem.batches.values()][0]).toMatchObject({ status: 'failed', error: expect.stringContaining('could not be started') });
  });

  test('a status change needs an ended source batch with no other change running on it', async () => {
    const mem = memoryKeys();
    const wf = recordingStarter();
    const svc = service(mem, wf.starter);
    const src = (await svc.issue(1, { ...ISSUE, count: 4 })).batch;
    await expect(svc.setStatus(1, src.id, 2)).rejects.toThrow(/still running/);

    await issueKeyChunk(mem.repos, sealer, { batchId: src.id, from: 1, to: 4 });
    await finishBatch(mem.repos, { batchId: src.id, status: 'completed' });
    const change = (await svc.setStatus(1, src.id, 2)).batch;
    expect(change).toMatchObject({ kind: 'status', requested: 4, source_batch_id: src.id });
    await expect(svc.setStatus(1, src.id, 1)).rejects.toThrow(new RegExp(`already has a running status batch ${change.id}`));
  });

  test('a retried chunk inserts nothing twice, a status chunk changes each key once, and the end is recorded once', async () => {
    const mem = memoryKeys();
    const svc = service(mem, recordingStarter().starter);
    const b = (await svc.issue(1, { ...ISSUE, count: 6 })).batch;
    expect(await issueKeyChunk(mem.repos, sealer, { batchId: b.id, from: 1, to: 4 })).toEqual({ inserted: 4, created: 4 });
    expect(await issueKeyChunk(mem.repos, sealer, { batchId: b.id, from: 1, to: 4 })).toEqual({ inserted: 0, created: 4 });
    expect(await issueKeyChunk(mem.repos, sealer, { batchId: b.id, from: 5, to: 6 })).toEqual({ inserted: 2, created: 6 });

    const first = await finishBatch(mem.repos, { batchId: b.id, status: 'completed' });
    const late = await finishBatch(mem.repos, { batchId: b.id, status: 'failed', error: 'a late duplicate' });
    expect(first).toEqual({ batchId: b.id, status: 'completed', created: 6, changed: 0 });
    expect(late).toEqual(first);
    expect(mem.audit.filter((a) => a.action.startsWith('key_batch.completed') || a.action === 'key_batch.failed')).toHaveLength(1);
    // A finished batch gets no more work, even from a late duplicate activity attempt.
    await expect(issueKeyChunk(mem.repos, sealer, { batchId: b.id, from: 1, to: 2 })).rejects.toBeInstanceOf(ConflictError);

    const change = (await svc.setStatus(1, b.id, 2)).batch;
    const chunk = { batchId: change.id, sourceBatchId: b.id, status: 2 as const, phase: 'updating' as const };
    expect(await setKeyStatusChunk(mem.repos, noChanges, { ...chunk, from: 1, to: 6 })).toEqual({ changed: 6, processed: 6 });
    expect(await setKeyStatusChunk(mem.repos, noChanges, { ...chunk, from: 1, to: 6 })).toEqual({ changed: 0, processed: 6 });
    expect(mem.keys.every((k) => k.status === 2)).toBe(true);
  });

  test('cancelling a batch whose workflow is gone closes it here, with what it did kept and said', async () => {
    const mem = memoryKeys();
    const wf = recordingStarter();
    const svc = service(mem, wf.starter);
    const b = (await svc.issue(1, { ...ISSUE, count: 10 })).batch;
    await issueKeyChunk(mem.repos, sealer, { batchId: b.id, from: 1, to: 3 });
    const cancelled = await svc.cancel(1, b.id, 'r-cancel');
    expect(wf.cancelled).toEqual([b.id]);
    expect(cancelled).toMatchObject({ status: 'cancelled', created: 3, note: expect.stringContaining('the 3 keys already issued remain') });
    await expect(svc.cancel(1, b.id)).resolves.toMatchObject({ status: 'cancelled' });
  });

  test('without a workflow engine, a rollout is a 503 and nothing is recorded', async () => {
    const mem = memoryKeys();
    await expect(service(mem, null).issue(1, { ...ISSUE, count: 10 })).rejects.toBeInstanceOf(UnavailableError);
    expect(mem.batches.size).toBe(0);
  });
});
