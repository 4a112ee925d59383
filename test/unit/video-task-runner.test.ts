import { Readable } from 'node:stream';
import type { BillingService } from '../../src/domain/billing/billing-service';
import type { ObjectStore } from '../../src/domain/ports/object-store';
import type { Transactions, Tx } from '../../src/domain/ports/transactions';
import type { VideoAdapter, VideoUpstreamStatus } from '../../src/domain/ports/video';
import type { VideoTaskRepository } from '../../src/domain/ports/video-tasks';
import type { ProgressWriter } from '../../src/domain/video/progress-writer';
import { createVideoTaskRunner, VideoRejectedError } from '../../src/domain/video/task-runner';
import { insertedVideoTask, type VideoTask } from '../../src/domain/video/tasks';
import { UpstreamError } from '../../src/domain/ports/upstream-error';
import { validateGatewayConfig } from '../../src/gateway-config/schema';
import { ConfigStore } from '../../src/gateway-config/store';

/**
 * The video task runner alone, over an in-memory task repository, a recording money API, an in-memory object store
 * and a scripted upstream: a task's submit happens once, its end bills or releases once in the transaction that
 * records it, its file is kept or the upstream's link with the reason, and an upstream's refusal ends it readably.
 */

const SECRET_KEY = 'sk-upstream-secret';

function config() {
  const r = validateGatewayConfig(
    {
      channels: [{ name: 'vid', type: 'openai-video', base_url: 'http://video.invalid/v1', key: SECRET_KEY, models: ['sora-2'] }],
      models: { 'sora-2': { per_second: 0.1 } },
    },
    'unit',
  );
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return ConfigStore.fixed(r.config);
}

function newTask(id: string): VideoTask {
  return insertedVideoTask(
    {
      id, family: 'A', account: 1, token: 7, token_name: 'k', model: 'sora-2', prompt: 'a cat', request: { model: 'sora-2', prompt: 'a cat' },
      channel: 'vid', amount: 400_000, callback_url: null, idempotency_key: null, request_id: `req-${id}`, public_origin: null, task_queue: 'q',
    },
    new Date(),
  );
}

/** Tasks in a map; a transaction's writes are applied at its commit, dropped at its rollback. */
function memoryVideo() {
  const rows = new Map<string, VideoTask>();
  const committed: string[] = [];
  let open: { writes: Array<() => void> } | null = null;
  const write = (tx: Tx | undefined, f: () => void) => (tx ? open!.writes.push(f) : f());
  const tasks: Partial<VideoTaskRepository> = {
    async get(id) {
      const t = rows.get(id);
      return t ? structuredClone(t) : null;
    },
    async recordProgress(id, p) {
      const t = rows.get(id)!;
      if (t.finishedAt) return;
      Object.assign(t, { status: p.status, progress: Math.max(t.progress, p.progress), upstreamId: p.upstreamId ?? t.upstreamId });
    },
    async recordResult(id, r) {
      const t = rows.get(id)!;
      Object.assign(t, { duration: r.duration, resolution: r.resolution });
      t.result = { storedAt: r.stored ? new Date() : t.result.storedAt, fallback: r.stored ? null : (r.fallback ?? null), deletedAt: null };
    },
    async finish(id, o, tx) {
      write(tx, () => {
        const t = rows.get(id)!;
        if (t.finishedAt) return;
        t.finishedAt = new Date();
        if (o.status === 'completed') Object.assign(t, { status: 'completed', progress: 100, billed: o.billed });
        else Object.assign(t, { status: 'failed', errorCode: o.errorCode, errorMessage: o.errorMessage });
      });
    },
  };
  const transactions: Transactions = {
    async run(work) {
      open = { writes: [] };
      const tx = { __brand: 'Tx' } as Tx;
      try {
        const out = await work(tx);
        for (const w of open.writes) w();
        committed.push('commit');
        return out;
      } finally {
        open = null;
      }
    },
  };
  return { rows, tasks: tasks as VideoTaskRepository, transactions, committed };
}

/** The money API as the runner uses it: which hold was settled or released, for how much, in which transaction. */
function recordingBilling() {
  const events: Array<{ op: 'settle' | 'release'; hold: string; amount?: number; tx: Tx }> = [];
  const settled = new Set<string>();
  const billing: Pick<BillingService, 'settleInTransaction' | 'releaseInTransaction'> = {
    async settleInTransaction(tx, hold, input) {
      events.push({ op: 'settle', hold, amount: input.actualAmount, tx });
      if (settled.has(hold)) return { status: 'already_settled' };
      settled.add(hold);
      return { status: 'settled', ledgerId: 1, billed: input.actualAmount, refunded: 0, shortfall: 0 };
    },
    async releaseInTransaction(tx, hold) {
      events.push({ op: 'release', hold, tx });
      return { status: 'released', refunded: 400_000 };
    },
  };
  return { billing, events };
}

function memoryStore(): ObjectStore & { objects: Map<string, Buffer> } {
  const objects = new Map<string, Buffer>();
  return {
    description: 'memory',
    objects,
    async put(key, body) {
      const chunks: Buffer[] = [];
      for await (const c of body) chunks.push(c as Buffer);
      objects.set(key, Buffer.concat(chunks));
      return objects.get(key)!.length;
    },
    async get(key) {
      const b = objects.get(key);
      return b ? Readable.from([b]) : null;
    },
    async delete(key) {
      objects.delete(key);
    },
  };
}

const progress: ProgressWriter = { record() {}, flush: async () => {}, close: async () => {} };

/** An upstream that answers the polls of `script` in turn and serves `file` at its asset link. */
function scriptedUpstream(script: VideoUpstreamStatus[], file = { type: 'video/mp4', bytes: Buffer.from('mp4 bytes') }) {
  const calls = { submit: 0, poll: 0, fetch: 0 };
  const adapter: VideoAdapter = {
    async submit() {
      calls.submit++;
      return 'up-1';
    },
    async poll() {
      return script[Math.min(calls.poll++, script.length - 1)];
    },
    async cancel() {},
    async fetchAsset() {
      calls.fetch++;
      return {
        status: 200,
        headers: { 'content-type': file.type, 'content-length': String(file.bytes.length) },
        body: Readable.from([file.bytes]),
        readAll: async () => file.bytes,
        destroy() {},
      };
    },
  };
  return { adapter, calls };
}

function setup(upstream: VideoAdapter, maxResultBytes = 1024) {
  const mem = memoryVideo();
  const money = recordingBilling();
  const store = memoryStore();
  const runner = createVideoTaskRunner({
    repos: { videoTasks: mem.tasks, transactions: mem.transactions },
    billing: money.billing,
    config: config(),
    progress,
    store,
    maxResultBytes,
    adapters: () => upstream,
  });
  return { runner, mem, money, store };
}

const timing = () => ({ minMs: 1, maxMs: 2, deadlineAtMs: Date.now() + 5_000, resultWindowMs: 1_000 });
const signal = () => new AbortController().signal;
const done = (over: Partial<VideoUpstreamStatus> = {}): VideoUpstreamStatus => ({ state: 'completed', progress: 100, assetUrl: 'https://cdn.invalid/v.mp4', duration: 8, resolution: '720p', ...over });

describe('video task runner over in-memory repositories', () => {
  test('a completed task keeps its file, is billed its quota once in the transaction that ends it, and reads completed', async () => {
    const up = scriptedUpstream([{ state: 'processing', progress: 40 }, done()]);
    const { runner, mem, money, store } = setup(up.adapter);
    mem.rows.set('t1', newTask('t1'));
    await expect(runner.runUpstream('t1', timing(), signal(), () => {})).resolves.toEqual({ state: 'completed' });
    const t = mem.rows.get('t1')!;
    expect(t).toMatchObject({ status: 'completed', progress: 100, billed: 400_000, upstreamId: 'up-1', duration: 8 });
    expect(store.objects.get('results/t1')?.toString()).toBe('mp4 bytes');
    expect(money.events).toEqual([{ op: 'settle', hold: 'task:t1', amount: 400_000, tx: expect.anything() }]);
    expect(mem.committed).toHaveLength(1);

    // The end again (a retried activity): the bill is not taken twice and the task keeps its first end.
    await runner.endTask('t1', { status: 'completed' });
    expect(money.events.map((e) => e.op)).toEqual(['settle', 'settle']);
    expect(mem.rows.get('t1')!.billed).toBe(400_000);
  });

  test('a retry after a crash reuses the upstream task instead of submitting again', async () => {
    const up = scriptedUpstream([done()]);
    const { runner, mem } = setup(up.adapter);
    mem.rows.set('t2', { ...newTask('t2'), upstreamId: 'up-earlier' });
    await expect(runner.submitUpstream('t2', signal())).resolves.toBe('up-earlier');
    expect(up.calls.submit).toBe(0);
  });

  test('a failed generation releases the hold and records why, sanitized of the channel key', async () => {
    const up = scriptedUpstream([{ state: 'failed', progress: 10, error: { code: 'moderation', message: `blocked for key ${SECRET_KEY}` } }]);
    const { runner, mem, money } = setup(up.adapter);
    mem.rows.set('t3', newTask('t3'));
    const end = await runner.runUpstream('t3', timing(), signal(), () => {});
    expect(end).toMatchObject({ state: 'failed', error: { code: 'moderation' } });
    expect(JSON.stringify(end)).not.toContain(SECRET_KEY);
    expect(money.events).toEqual([{ op: 'release', hold: 'task:t3', tx: expect.anything() }]);
    expect(mem.rows.get('t3')).toMatchObject({ status: 'failed', errorCode: 'moderation', billed: null });
  });

  test('a file that is not a video is not stored: the task completes on the upstream link, with the reason', async () => {
    const up = scriptedUpstream([done()], { type: 'text/html', bytes: Buffer.from('<html>') });
    const { runner, mem, store } = setup(up.adapter);
    mem.rows.set('t4', newTask('t4'));
    await runner.runUpstream('t4', timing(), signal(), () => {});
    expect(store.objects.size).toBe(0);
    expect(mem.rows.get('t4')!.result.fallback).toBe('the file is not a video (text/html)');
    expect(mem.rows.get('t4')!.status).toBe('completed');
  });

  test('an upstream refusal for good is a VideoRejectedError (no retry); a passing fault is thrown as it is', async () => {
    const refused = scriptedUpstream([]);
    refused.adapter.submit = async () => {
      throw new UpstreamError('status', 'bad prompt', 400, 'invalid_prompt');
    };
    const a = setup(refused.adapter);
    a.mem.rows.set('t5', newTask('t5'));
    await expect(a.runner.submitUpstream('t5', signal())).rejects.toBeInstanceOf(VideoRejectedError);

    const flaky = scriptedUpstream([]);
    flaky.adapter.submit = async () => {
      throw new UpstreamError('status', 'upstream unavailable', 503);
    };
    const b = setup(flaky.adapter);
    b.mem.rows.set('t6', newTask('t6'));
    await expect(b.runner.submitUpstream('t6', signal())).rejects.toBeInstanceOf(UpstreamError);
    expect(b.mem.rows.get('t6')!.upstreamId).toBeNull();
  });

  test('past its deadline a task is left to the workflow to end as a timeout, unbilled', async () => {
    const up = scriptedUpstream([{ state: 'processing', progress: 5 }]);
    const { runner, mem, money } = setup(up.adapter);
    mem.rows.set('t7', newTask('t7'));
    const end = await runner.runUpstream('t7', { ...timing(), deadlineAtMs: Date.now() + 30 }, signal(), () => {});
    expect(end).toEqual({ state: 'timeout' });
    expect(money.events).toEqual([]);
    expect(mem.rows.get('t7')!.finishedAt).toBeNull();
  });
});
