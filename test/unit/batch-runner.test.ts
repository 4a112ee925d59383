import type { BatchRecord } from '../../src/domain/batches/batch-record';
import type { LineOutcome } from '../../src/domain/batches/ports';
import { runBatchLines, type RunnerDeps } from '../../src/domain/batches/runner';
import { LineSlots } from '../../src/domain/batches/slots';
import { InvalidApiKeyError } from '../../src/domain/errors';
import type { ApiKeyPrincipal } from '../../src/domain/keys/key-auth';
import { KeyLimitError, UNLIMITED } from '../../src/domain/limits/admission';
import type { BatchRepository, LineResult, PendingLine } from '../../src/domain/ports/batches';

/**
 * The batch runner alone, over an in-memory BatchRepository and a fake line call: which lines run, how often, in
 * what parallelism, and how each stop (a cancel, the key gone, quota out, a rerun after a crash) leaves the lines.
 */

interface MemLine extends PendingLine {
  state: 'pending' | 'succeeded' | 'failed';
  status?: number;
  result?: unknown;
}

function memoryBatches(batch: BatchRecord, lines: number) {
  const rows: MemLine[] = Array.from({ length: lines }, (_, idx) => ({
    idx,
    custom_id: `c-${idx}`,
    body: { model: 'gpt-test', messages: [{ role: 'user', content: `line ${idx}` }] },
    request_id: `req-${idx}`,
    state: 'pending',
  }));
  const writes: LineResult[][] = [];
  const repo: Partial<BatchRepository> = {
    async get(id) {
      return id === batch.id ? { ...batch } : null;
    },
    async pendingLines(_id, afterIdx, limit) {
      return rows.filter((l) => l.state === 'pending' && l.idx > afterIdx).slice(0, limit).map(({ idx, custom_id, body, request_id }) => ({ idx, custom_id, body, request_id }));
    },
    async hasPending() {
      return rows.some((l) => l.state === 'pending');
    },
    async recordLines(_id, results) {
      // A write takes a round trip, as a database's does: outcomes arriving meanwhile wait for the next one.
      await new Promise((r) => setTimeout(r, 2));
      writes.push(results);
      for (const r of results) {
        const line = rows[r.idx];
        if (line.state !== 'pending') continue;
        Object.assign(line, { state: r.state, status: r.status, result: r.result });
        if (r.state === 'succeeded') batch.succeeded++;
        else batch.failed++;
      }
    },
    async failPending(_id, status, error) {
      for (const line of rows.filter((l) => l.state === 'pending')) {
        Object.assign(line, { state: 'failed', status, result: error });
        batch.failed++;
      }
      if (status === 429) batch.quotaExhausted = true;
    },
  };
  return { repo: repo as BatchRepository, rows, writes, batch };
}

function batchRecord(over: Partial<BatchRecord> = {}): BatchRecord {
  const now = Math.floor(Date.now() / 1000);
  return {
    id: 'batch_1', api: 'openai', accountId: 1, tokenId: 7, tokenName: 'k', endpoint: '/v1/chat/completions', inputFileId: 'file-1',
    completionWindow: '24h', status: 'in_progress', errors: null, outputFileId: null, errorFileId: null, metadata: null, callbackUrl: null,
    publicOrigin: null, requestId: 'req', total: 0, succeeded: 0, failed: 0, canceled: 0, expired: 0, quotaExhausted: false,
    usage: { input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 },
    createdAt: now, inProgressAt: now, expiresAt: now + 86_400, finalizingAt: null, completedAt: null, failedAt: null, expiredAt: null,
    cancellingAt: null, cancelledAt: null, endedAt: null,
    ...over,
  };
}

const KEY: ApiKeyPrincipal = {
  tokenId: 7, accountId: 1, name: 'k', group: '', models: [], unlimitedQuota: false, expiredTime: -1,
  rpmLimit: 0, tpmLimit: 0, maxConcurrency: 0, periodQuota: 0, quotaPeriod: null,
};

type Call = (body: { messages: Array<{ content: string }> }, requestId: string) => Promise<LineOutcome>;

function deps(repo: BatchRepository, call: Call, over: Partial<RunnerDeps> = {}): RunnerDeps & { inFlightMax: () => number } {
  let inFlight = 0;
  let inFlightMax = 0;
  return {
    batches: repo,
    slots: new LineSlots(4),
    async callLine(_endpoint, body, caller) {
      inFlight++;
      inFlightMax = Math.max(inFlightMax, inFlight);
      try {
        return await call(body as never, caller.requestId);
      } finally {
        inFlight--;
      }
    },
    loadKey: async () => KEY,
    admit: async () => ({ admission: UNLIMITED, period: undefined }),
    concurrencyOf: () => 0,
    inFlightMax: () => inFlightMax,
    ...over,
  };
}

const run = (d: RunnerDeps, id = 'batch_1', maxMs = 10_000) => runBatchLines(d, id, { signal: new AbortController().signal, heartbeat() {}, maxMs, statusEveryMs: 20 });
const ok = (content: string): LineOutcome => ({ ok: true, body: { choices: [{ message: { content } }] } });
const tick = () => new Promise((r) => setTimeout(r, 1));

describe('batch runner over in-memory repositories', () => {
  test('every pending line runs once, as its own request id, and its outcome is recorded', async () => {
    const mem = memoryBatches(batchRecord(), 300);
    const seen: string[] = [];
    const d = deps(mem.repo, async (body, requestId) => {
      seen.push(requestId);
      await tick();
      return ok(body.messages[0].content);
    });
    await expect(run(d)).resolves.toEqual({ more: false, stop: null });
    expect(seen.sort()).toEqual(mem.rows.map((l) => l.request_id).sort());
    expect(mem.rows.every((l) => l.state === 'succeeded' && l.status === 200)).toBe(true);
    expect(mem.rows[12].result).toEqual({ choices: [{ message: { content: 'line 12' } }] });
    expect(mem.batch.succeeded).toBe(300);
    // At most the worker's slots in flight; outcomes are written in groups, not a statement a line.
    expect(d.inFlightMax()).toBeLessThanOrEqual(4);
    expect(mem.writes.length).toBeLessThan(300);
  });

  test("the key's own concurrency caps the lines in flight below the worker's slots", async () => {
    const mem = memoryBatches(batchRecord(), 20);
    const d = deps(mem.repo, async (body) => (await tick(), ok(body.messages[0].content)), { concurrencyOf: () => 2 });
    await run(d);
    expect(d.inFlightMax()).toBe(2);
  });

  test('a rerun after a crash sends only the lines not recorded', async () => {
    const mem = memoryBatches(batchRecord(), 10);
    await mem.repo.recordLines('batch_1', [0, 1, 2, 3].map((idx) => ({ idx, state: 'succeeded' as const, status: 200, result: {} })));
    const seen: string[] = [];
    await run(deps(mem.repo, async (_b, id) => (seen.push(id), ok('x'))));
    expect(seen.sort()).toEqual(['req-4', 'req-5', 'req-6', 'req-7', 'req-8', 'req-9']);
    expect(mem.batch.succeeded).toBe(10);
  });

  test('a deleted key fails every pending line with a 401 in the batch API format, and nothing is sent', async () => {
    const mem = memoryBatches(batchRecord({ api: 'anthropic', endpoint: '/v1/messages' }), 3);
    const call = jest.fn();
    const d = deps(mem.repo, call, { loadKey: async () => Promise.reject(new InvalidApiKeyError('This API key has been deleted')) });
    await expect(run(d)).resolves.toEqual({ more: false, stop: 'key' });
    expect(call).not.toHaveBeenCalled();
    expect(mem.rows.map((l) => l.status)).toEqual([401, 401, 401]);
    expect(mem.rows[0].result).toEqual({ type: 'error', error: { type: 'authentication_error', message: 'This API key has been deleted' } });
  });

  test('quota running out stops the batch: the lines not sent fail with 429 and the batch is marked', async () => {
    const mem = memoryBatches(batchRecord(), 50);
    let calls = 0;
    const d = deps(mem.repo, async () => {
      calls++;
      if (calls > 5) return { ok: false, status: 429, code: 'insufficient_quota', body: { error: { code: 'insufficient_quota' } } };
      return ok('x');
    }, { slots: new LineSlots(1) });
    await expect(run(d)).resolves.toEqual({ more: false, stop: 'quota' });
    expect(mem.rows.filter((l) => l.state === 'succeeded')).toHaveLength(5);
    expect(mem.rows.filter((l) => l.state === 'failed' && l.status === 429)).toHaveLength(45);
    expect(mem.batch.quotaExhausted).toBe(true);
    // Once out of quota, no further line reaches the upstream.
    expect(calls).toBe(6);
  });

  test('a cancelled batch runs nothing more and leaves its lines pending', async () => {
    const mem = memoryBatches(batchRecord(), 100);
    let sent = 0;
    const d = deps(mem.repo, async () => {
      if (++sent === 3) mem.batch.status = 'cancelling';
      await new Promise((r) => setTimeout(r, 30));
      return ok('x');
    }, { slots: new LineSlots(1) });
    await expect(run(d)).resolves.toEqual({ more: false, stop: 'cancel' });
    expect(sent).toBeLessThan(10);
    expect(mem.rows.filter((l) => l.state === 'pending').length).toBeGreaterThan(90);
  });

  test('a batch past its expiry sends nothing', async () => {
    const mem = memoryBatches(batchRecord({ expiresAt: Math.floor(Date.now() / 1000) - 1 }), 5);
    const call = jest.fn();
    await expect(run(deps(mem.repo, call))).resolves.toEqual({ more: false, stop: 'expired' });
    expect(call).not.toHaveBeenCalled();
  });

  test('a run hands back when its time is up, with the rest still pending', async () => {
    const mem = memoryBatches(batchRecord(), 40);
    const d = deps(mem.repo, async () => (await new Promise((r) => setTimeout(r, 20)), ok('x')), { slots: new LineSlots(1) });
    const end = await run(d, 'batch_1', 100);
    expect(end).toEqual({ more: true, stop: null });
    expect(mem.rows.filter((l) => l.state === 'pending').length).toBeGreaterThan(20);
  });

  test("a line refused by the key's rate limit waits, then runs", async () => {
    const mem = memoryBatches(batchRecord(), 1);
    let refusals = 0;
    const d = deps(mem.repo, async () => ok('x'), {
      admit: async () => {
        if (refusals++ === 0) throw new KeyLimitError('requests', 0, {});
        return { admission: UNLIMITED, period: undefined };
      },
    });
    await expect(run(d)).resolves.toEqual({ more: false, stop: null });
    expect(refusals).toBe(2);
    expect(mem.rows[0].state).toBe('succeeded');
  });

  test('an upstream 429 is retried after its backoff; another error is the line\'s outcome', async () => {
    const mem = memoryBatches(batchRecord(), 2);
    const attempts = new Map<string, number>();
    const d = deps(mem.repo, async (_b, id) => {
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      if (id === 'req-0' && n === 1) return { ok: false, status: 429, code: 'rate_limit_exceeded', body: {}, retryAfterSeconds: 0 };
      if (id === 'req-1') return { ok: false, status: 400, code: 'invalid_request_error', body: { error: { message: 'bad' } } };
      return ok('x');
    });
    await run(d);
    expect(attempts.get('req-0')).toBe(2);
    expect(attempts.get('req-1')).toBe(1);
    expect(mem.rows.map((l) => [l.state, l.status])).toEqual([['succeeded', 200], ['failed', 400]]);
  });
});
