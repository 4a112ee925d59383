import type { Pool } from 'pg';
import { createHoldRepository } from '../../src/db/repositories/holds';
import { BillingBatcher } from '../../src/domain/billing/batcher';
import type { BillingOperation } from '../../src/domain/billing/operations';

type Encoded = Record<string, unknown>;
interface QueryConfig {
  name: string;
  text: string;
  values: [string];
}
interface Sent {
  config: QueryConfig;
  ops: Encoded[];
  /** Answers the batch; by default each op gets a row naming its key. */
  answer(rows?: unknown[]): void;
  fail(err: unknown): void;
}

/** The row the fake answers for one operation: it names the key, so each caller can be told apart. */
const rowOf = (op: Encoded) => ({ o_status: 'ok', key: op.key });

/**
 * A pool stand-in recording every billing_batch call. With `auto`, each batch is answered at once with its rows,
 * or rejected when `auto` returns an Error; without it, the test answers each batch itself (a batch in flight).
 */
function fakePool(auto?: (ops: Encoded[]) => unknown[] | Error) {
  const sent: Sent[] = [];
  const db = {
    query(config: QueryConfig) {
      const ops = JSON.parse(config.values[0]) as Encoded[];
      return new Promise((resolve, reject) => {
        const s: Sent = { config, ops, answer: (rows = ops.map(rowOf)) => resolve({ rows: [{ r: rows }] }), fail: reject };
        sent.push(s);
        if (auto) {
          const out = auto(ops);
          if (out instanceof Error) reject(out);
          else s.answer(out);
        }
      });
    },
  };
  return { db: db as unknown as Pool, sent, keys: () => sent.map((s) => s.ops.map((o) => o.key)) };
}

const release = (key: string): BillingOperation => ({ op: 'release', key });
const flush = () => new Promise((r) => setImmediate(r));

describe('billing batcher', () => {
  it('sends a lone operation at once, alone, encoded, through the named statement', async () => {
    const { db, sent } = fakePool();
    const b = new BillingBatcher(createHoldRepository(db));
    const p = b.submit({ op: 'renew', key: 'k1', ttlSeconds: 30 });
    // No timer: the query is issued within submit itself.
    expect(sent).toHaveLength(1);
    expect(sent[0].config.name).toBe('billing_batch');
    expect(sent[0].config.text).toBe('SELECT billing_batch($1::jsonb) AS r');
    expect(sent[0].ops).toEqual([{ op: 'renew', key: 'k1', ttl: 30 }]);
    expect(b.queued).toBe(0);
    sent[0].answer([{ o_status: 'ok' }]);
    await expect(p).resolves.toEqual({ o_status: 'ok' });
  });

  it('queues operations while a batch is in flight and sends them together next, each caller getting its own row', async () => {
    const { db, sent, keys } = fakePool();
    const b = new BillingBatcher(createHoldRepository(db));
    const first = b.submit(release('a'));
    const rest = [b.submit(release('b')), b.submit(release('c')), b.submit(release('d'))];
    expect(sent).toHaveLength(1);
    expect(b.queued).toBe(3);
    sent[0].answer();
    await expect(first).resolves.toEqual({ o_status: 'ok', key: 'a' });
    expect(keys()).toEqual([['a'], ['b', 'c', 'd']]);
    // Rows are matched to callers by position.
    sent[1].answer([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(await Promise.all(rest)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(b.peakQueued).toBe(3);
    expect(b.queued).toBe(0);
  });

  it('puts at most maxBatch operations in one batch', async () => {
    const { db, keys } = fakePool((ops) => ops.map(rowOf));
    const b = new BillingBatcher(createHoldRepository(db), 2);
    const results = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((k) => b.submit(release(k))));
    // The first goes alone; the five queued behind it go two by two, in order.
    expect(keys()).toEqual([['a'], ['b', 'c'], ['d', 'e'], ['f']]);
    expect(results.map((r) => (r as unknown as { key: string }).key)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(b.peakQueued).toBe(5);
  });

  it('retries a batch that failed as a whole one operation at a time, so each caller gets its own answer', async () => {
    const { db, keys } = fakePool((ops) => {
      if (ops.length > 1) return new Error('deadlock detected');
      return ops[0].key === 'bad' ? new Error('bad op') : ops.map(rowOf);
    });
    const b = new BillingBatcher(createHoldRepository(db));
    const a = b.submit(release('a'));
    const queued = [b.submit(release('b')), b.submit(release('bad')), b.submit(release('c'))];
    const outcome = await Promise.allSettled([a, ...queued]);
    expect(outcome).toEqual([
      { status: 'fulfilled', value: { o_status: 'ok', key: 'a' } },
      { status: 'fulfilled', value: { o_status: 'ok', key: 'b' } },
      { status: 'rejected', reason: new Error('bad op') },
      { status: 'fulfilled', value: { o_status: 'ok', key: 'c' } },
    ]);
    expect(keys()).toEqual([['a'], ['b', 'bad', 'c'], ['b'], ['bad'], ['c']]);
  });

  it('rejects the caller of a failed single-operation batch without a retry, and carries on with the next', async () => {
    const { db, sent, keys } = fakePool();
    const b = new BillingBatcher(createHoldRepository(db));
    const a = b.submit(release('a'));
    const next = b.submit(release('b'));
    sent[0].fail(new Error('connection lost'));
    await expect(a).rejects.toThrow('connection lost');
    expect(keys()).toEqual([['a'], ['b']]);
    sent[1].answer();
    await expect(next).resolves.toEqual({ o_status: 'ok', key: 'b' });
  });

  it('idle() resolves only once nothing is queued or in flight', async () => {
    const { db, sent } = fakePool();
    const b = new BillingBatcher(createHoldRepository(db));
    await b.idle(); // Nothing to wait for.
    void b.submit(release('a'));
    void b.submit(release('b'));
    let idle = false;
    const waiting = b.idle().then(() => (idle = true));
    await flush();
    expect(idle).toBe(false);
    sent[0].answer();
    // The first batch is back but the second is now in flight.
    await flush();
    expect(sent).toHaveLength(2);
    await flush();
    expect(idle).toBe(false);
    sent[1].answer();
    await waiting;
    expect(idle).toBe(true);
  });

  it('an operation no caller waits for lingers up to lingerMs for company; one a caller waits for takes it along at once', async () => {
    const { db, sent, keys } = fakePool((ops) => ops.map(rowOf));
    const b = new BillingBatcher(createHoldRepository(db), 48, 20);
    const a = b.submit(release('a'), { linger: true });
    const c = b.submit(release('c'), { linger: true });
    await flush();
    expect(sent).toHaveLength(0);
    await expect(a).resolves.toEqual({ o_status: 'ok', key: 'a' });
    expect(keys()).toEqual([['a', 'c']]);
    await c;

    void b.submit(release('d'), { linger: true });
    const e = b.submit(release('e'));
    expect(keys()[1]).toEqual(['d', 'e']);
    await e;
  });

  it('lingering operations go at once when the batch is full, and when idle() is asked', async () => {
    const { db, keys } = fakePool((ops) => ops.map(rowOf));
    const b = new BillingBatcher(createHoldRepository(db), 2, 60_000);
    void b.submit(release('a'), { linger: true });
    void b.submit(release('b'), { linger: true });
    expect(keys()).toEqual([['a', 'b']]);
    void b.submit(release('c'), { linger: true });
    await flush();
    expect(keys()).toHaveLength(1);
    await b.idle();
    expect(keys()).toEqual([['a', 'b'], ['c']]);
  });

  it('lingering operations go once lingerBatch of them are queued, though a batch may hold more', async () => {
    const { db, sent, keys } = fakePool();
    const b = new BillingBatcher(createHoldRepository(db), 48, 60_000, 3);
    void b.submit(release('a'), { linger: true });
    void b.submit(release('b'), { linger: true });
    await flush();
    expect(sent).toHaveLength(0);
    void b.submit(release('c'), { linger: true });
    expect(keys()).toEqual([['a', 'b', 'c']]);
    // While that batch is in flight, more than lingerBatch queue up: they go together when it returns.
    for (const k of ['d', 'e', 'f', 'g']) void b.submit(release(k), { linger: true });
    sent[0].answer();
    await flush();
    expect(keys()[1]).toEqual(['d', 'e', 'f', 'g']);
    sent[1].answer();
    await b.idle();
  });
});
