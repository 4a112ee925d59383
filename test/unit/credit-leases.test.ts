import type { BillingBatcher } from '../../src/domain/billing/batcher';
import { CreditLeases, type LeaseOptions } from '../../src/domain/billing/credit-leases';
import { type BillingOperation, encodeEntry } from '../../src/domain/billing/operations';

interface Call {
  op: BillingOperation;
  done: boolean;
  answer(row: unknown): void;
  fail(err: unknown): void;
}

/**
 * A BillingBatcher stand-in: every submitted operation is recorded and stays pending until the test answers it,
 * except releases, answered at once (nothing in CreditLeases waits on their rows). idle() waits for every answer.
 */
function fakeBilling() {
  const calls: Call[] = [];
  const billing = {
    submit(op: BillingOperation) {
      return new Promise((resolve, reject) => {
        const c: Call = {
          op,
          done: false,
          answer: (row) => ((c.done = true), resolve(row)),
          fail: (err) => ((c.done = true), reject(err)),
        };
        calls.push(c);
        if (op.op === 'release') c.answer({ o_status: 'released', o_refunded: 0 });
      });
    },
    submitEncoded(json: string) {
      return billing.submit(JSON.parse(json) as BillingOperation);
    },
    async idle() {
      while (calls.some((c) => !c.done)) await flush();
    },
  };
  const of = (kind: BillingOperation['op']) => calls.filter((c) => c.op.op === kind);
  /** The oldest unanswered operation of a kind. */
  const pending = (kind: BillingOperation['op']) => {
    const c = of(kind).find((x) => !x.done);
    if (!c) throw new Error(`no pending ${kind}`);
    return c;
  };
  return { billing: billing as unknown as BillingBatcher, calls, of, pending };
}

const flush = () => new Promise((r) => setImmediate(r));

/** Waits for a condition, with a deadline, instead of sleeping a fixed time. */
async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}

const entry = { requestId: 'req', model: 'm' };
const settled = (fromLease: number, over: object = {}) => ({ o_status: 'settled', o_ledger_id: 1, o_billed: fromLease, o_shortfall: 0, o_from_lease: fromLease, ...over });

// Ticks far apart: the tests drive every release themselves (barrier, close), not the idle timer.
const OPTS: LeaseOptions = { chunkCalls: 4, ttlSeconds: 60, idleMs: 60_000, refusedMs: 50, tickMs: 60_000 };
const TOKEN = 1;
const ACCOUNT = 7;

/** A CreditLeases whose lease on TOKEN holds 4 x 10 credits (its first top-up answered ok). */
async function withLease(opts: LeaseOptions = OPTS) {
  const fake = fakeBilling();
  const leases = new CreditLeases(fake.billing, opts);
  expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
  fake.pending('lease').answer({ o_status: 'ok' });
  await flush();
  return { ...fake, leases };
}

describe('credit leases', () => {
  afterEach(() => jest.restoreAllMocks());

  it('a first draw returns null and starts one top-up of amount x chunkCalls', async () => {
    const { billing, calls, pending } = fakeBilling();
    const leases = new CreditLeases(billing, OPTS);
    expect(leases.active).toBe(false);
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    // A second draw while the top-up is in flight starts no other.
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    expect(calls).toHaveLength(1);
    expect(calls[0].op).toEqual({ op: 'lease', key: expect.stringMatching(/^lease:.+:1:\d+$/), account: ACCOUNT, token: TOKEN, amount: 40, ttlSeconds: 60 });
    expect(leases.active).toBe(true);
    pending('lease').answer({ o_status: 'ok' });
    await flush();
    expect(leases.draw(TOKEN, ACCOUNT, 10)).not.toBeNull();
  });

  it('draws succeed until the unreserved part is too small, then top up in the background', async () => {
    const { leases, of } = await withLease();
    const draws = [1, 2, 3].map(() => leases.draw(TOKEN, ACCOUNT, 10));
    for (const d of draws) expect(d).toMatchObject({ amount: 10 });
    expect(draws[2]!.lease).toMatchObject({ held: 40, drawn: 30, inflight: 3 });
    // 10 left: more than a quarter of a chunk (10) was left after each draw, so no top-up yet.
    expect(of('lease')).toHaveLength(1);
    expect(leases.draw(TOKEN, ACCOUNT, 15)).toBeNull();
    // The refused draw asked for a top-up sized on its own estimate.
    expect(of('lease')).toHaveLength(2);
    expect(of('lease')[1].op).toMatchObject({ amount: 60, key: of('lease')[0].op.key });
    // What is left still serves a call that fits.
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toMatchObject({ lease: { drawn: 40 } });
  });

  it('tops up ahead of need once less than a quarter of a chunk is unreserved', async () => {
    const { leases, of, pending } = await withLease();
    for (let i = 0; i < 3; i++) leases.draw(TOKEN, ACCOUNT, 10);
    expect(of('lease')).toHaveLength(1);
    const d = leases.draw(TOKEN, ACCOUNT, 10);
    expect(d).not.toBeNull();
    expect(of('lease')).toHaveLength(2);
    pending('lease').answer({ o_status: 'ok' });
    await flush();
    expect(d!.lease.held).toBe(80);
  });

  it('refuses a draw for another account on the same token, without a top-up', async () => {
    const { leases, calls } = await withLease();
    const before = calls.length;
    expect(leases.draw(TOKEN, 8, 10)).toBeNull();
    expect(calls).toHaveLength(before);
    expect(leases.draw(TOKEN, ACCOUNT, 10)).not.toBeNull();
  });

  it('giveBack returns the reservation to the lease', async () => {
    const { leases } = await withLease();
    const draws = [1, 2, 3].map(() => leases.draw(TOKEN, ACCOUNT, 10)!);
    expect(leases.draw(TOKEN, ACCOUNT, 40)).toBeNull();
    for (const d of draws) leases.giveBack(d);
    expect(draws[0].lease).toMatchObject({ held: 40, drawn: 0, inflight: 0 });
    // The whole lease is unreserved again.
    expect(leases.draw(TOKEN, ACCOUNT, 40)).not.toBeNull();
  });

  it('settle pays min(cost, reservation + unreserved extra) from the lease', async () => {
    const { leases, pending } = await withLease();
    const a = leases.draw(TOKEN, ACCOUNT, 10)!;
    const b = leases.draw(TOKEN, ACCOUNT, 10)!;
    const lease = a.lease;

    // Cheaper than reserved: the lease pays the cost, the rest stays in it.
    const pa = leases.settle(a, { quota: 6, entry }).outcome;
    expect(pending('settle_lease').op).toEqual({ op: 'settle_lease', key: lease.key, portion: 6, actual: 6, account: ACCOUNT, token: TOKEN, entry: encodeEntry(entry) });
    expect(lease).toMatchObject({ held: 34, drawn: 10, inflight: 1 });
    pending('settle_lease').answer(settled(6));
    await expect(pa).resolves.toEqual({ status: 'settled', billed: 6, shortfall: 0 });

    // Dearer than reserved: the lease's unreserved 24 covers part of the excess, billing_settle_lease the rest.
    const pb = leases.settle(b, { quota: 100, entry }).outcome;
    expect(pending('settle_lease').op).toMatchObject({ portion: 34, actual: 100 });
    expect(lease).toMatchObject({ held: 0, drawn: 0, inflight: 0 });
    pending('settle_lease').answer(settled(34, { o_billed: '100', o_shortfall: '0' }));
    // Numbers that came through JSON as strings are converted.
    await expect(pb).resolves.toEqual({ status: 'settled', billed: 100, shortfall: 0 });
    expect(lease.stale).toBe(false);
  });

  it('the extra for a dearer call leaves other calls\' reservations alone', async () => {
    const { leases, pending } = await withLease();
    const a = leases.draw(TOKEN, ACCOUNT, 10)!;
    leases.draw(TOKEN, ACCOUNT, 10);
    leases.draw(TOKEN, ACCOUNT, 10);
    void leases.settle(a, { quota: 100, entry }).outcome;
    // 40 held, 30 reserved: only 10 unreserved may be added to a's own 10.
    expect(pending('settle_lease').op).toMatchObject({ portion: 20, actual: 100 });
    expect(a.lease).toMatchObject({ held: 20, drawn: 20, inflight: 2 });
  });

  it('a settle answered "duplicate" restores what it took from the lease, and stops drawing from it', async () => {
    const { leases, pending } = await withLease();
    const d = leases.draw(TOKEN, ACCOUNT, 10)!;
    const p = leases.settle(d, { quota: 8, entry }).outcome;
    expect(d.lease.held).toBe(32);
    pending('settle_lease').answer({ o_status: 'duplicate', o_ledger_id: null, o_billed: 0, o_shortfall: 0, o_from_lease: 0 });
    await expect(p).resolves.toEqual({ status: 'duplicate', billed: 0, shortfall: 0 });
    // An earlier attempt of this settle may have committed and taken its portion (a batch whose answer was lost runs
    // its operations again alone): only the lease's row knows what it holds now.
    expect(d.lease).toMatchObject({ held: 40, drawn: 0, stale: true });
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
  });

  it('a settle whose key budget moved under it (no journal) fails: the answer is withheld, never delivered unbilled', async () => {
    const { leases, pending } = await withLease();
    const d = leases.draw(TOKEN, ACCOUNT, 10)!;
    const s = leases.settle(d, { quota: 8, entry });
    pending('settle_lease').answer({ o_status: 'moved', o_ledger_id: null, o_billed: 0, o_shortfall: 0, o_from_lease: 0 });
    await expect(s.durable).rejects.toThrow('budget moved');
    await expect(s.outcome).rejects.toThrow('budget moved');
    expect(d.lease.stale).toBe(true);
  });

  it('a settle whose lease portion disagrees with the database marks the lease stale', async () => {
    const { leases, pending } = await withLease();
    const d = leases.draw(TOKEN, ACCOUNT, 10)!;
    const p = leases.settle(d, { quota: 10, entry }).outcome;
    pending('settle_lease').answer(settled(4));
    await p;
    expect(d.lease.stale).toBe(true);
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
  });

  it('a failing settle rejects and marks the lease stale: later draws return null and start no top-up', async () => {
    const { leases, pending, calls } = await withLease();
    const d = leases.draw(TOKEN, ACCOUNT, 10)!;
    const p = leases.settle(d, { quota: 10, entry }).outcome;
    pending('settle_lease').fail(new Error('connection lost'));
    await expect(p).rejects.toThrow('connection lost');
    expect(d.lease.stale).toBe(true);
    const before = calls.length;
    expect(leases.draw(TOKEN, ACCOUNT, 1)).toBeNull();
    expect(calls).toHaveLength(before);
  });

  it('a refused top-up is not retried within refusedMs, and is after it', async () => {
    let now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const { billing, of, pending } = fakeBilling();
    const leases = new CreditLeases(billing, OPTS);
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    pending('lease').answer({ o_status: 'insufficient_quota' });
    await flush();
    // The empty lease is dropped: nothing to release.
    expect(leases.active).toBe(false);
    now += 49;
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    expect(of('lease')).toHaveLength(1);
    // refusedMs is per token: another key still tops up.
    expect(leases.draw(2, ACCOUNT, 10)).toBeNull();
    expect(of('lease').map((c) => c.op)).toMatchObject([{ token: TOKEN }, { token: 2 }]);
    now += 1;
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    expect(of('lease').map((c) => c.op)).toMatchObject([{ token: TOKEN }, { token: 2 }, { token: TOKEN }]);
  });

  it('a lease that runs dry while its top-up is on the way doubles its next chunk, once per top-up, up to maxChunkCalls', async () => {
    const { leases, of, pending } = await withLease({ ...OPTS, maxChunkCalls: 16 });
    const amounts = () => of('lease').map((c) => (c.op as { amount: number }).amount);
    /** Draws until one is refused (the lease ran dry), then answers the top-up in flight. */
    const runDry = async () => {
      while (leases.draw(TOKEN, ACCOUNT, 10)) {
        // keep drawing: every reservation stays in flight
      }
      // More dry draws during the same top-up grow nothing more.
      expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
      pending('lease').answer({ o_status: 'ok' });
      await flush();
    };
    expect(amounts()).toEqual([40]);
    await runDry();
    // The top-up in flight when it ran dry was asked at the old size; the next one is twice it.
    expect(amounts()).toEqual([40, 40]);
    await runDry();
    expect(amounts()).toEqual([40, 40, 80]);
    await runDry();
    await runDry();
    // 4 -> 8 -> 16 calls, and no further.
    expect(amounts()).toEqual([40, 40, 80, 160, 160]);
  });

  it('a grown chunk the budget refuses is asked again at once at half, down to chunkCalls', async () => {
    let now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const { leases, of, pending } = await withLease({ ...OPTS, maxChunkCalls: 16 });
    const amounts = () => of('lease').map((c) => (c.op as { amount: number }).amount);
    while (leases.draw(TOKEN, ACCOUNT, 10)) {
      // run dry with a top-up in flight: the chunk grows to 8 calls
    }
    pending('lease').answer({ o_status: 'ok' });
    await flush();
    while (leases.draw(TOKEN, ACCOUNT, 10)) {
      // the next top-up asks 8 calls' worth; running dry again meanwhile grows the chunk to 16
    }
    expect(amounts()).toEqual([40, 40, 80]);
    pending('lease').answer({ o_status: 'insufficient_quota' });
    await flush();
    // Refused at 16 calls: the very next draw asks for 8, without waiting refusedMs; then for 4.
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    expect(amounts()).toEqual([40, 40, 80, 80]);
    pending('lease').answer({ o_status: 'insufficient_quota' });
    await flush();
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    expect(amounts()).toEqual([40, 40, 80, 80, 40]);
    pending('lease').answer({ o_status: 'insufficient_quota' });
    await flush();
    // Refused at chunkCalls: now it waits refusedMs, as a nearly spent key does.
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    expect(of('lease')).toHaveLength(5);
    now += 50;
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    expect(amounts()).toEqual([40, 40, 80, 80, 40, 40]);
  });

  it('a first lease still waiting for its first chunk does not grow', async () => {
    const { billing, of, pending } = fakeBilling();
    const leases = new CreditLeases(billing, OPTS);
    for (let i = 0; i < 5; i++) expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    pending('lease').answer({ o_status: 'ok' });
    await flush();
    while (leases.draw(TOKEN, ACCOUNT, 10)) {
      // draw it down: the top-up ahead of need asks the base chunk
    }
    expect(of('lease').map((c) => (c.op as { amount: number }).amount)).toEqual([40, 40]);
  });

  it('a top-up answered "moved" or failing marks the lease stale; a failure is reported', async () => {
    const errors: string[] = [];
    const { leases, pending } = await withLease({ ...OPTS, onError: (_e, what) => errors.push(what) });
    const d = leases.draw(TOKEN, ACCOUNT, 10)!;
    leases.giveBack(d);
    leases.draw(TOKEN, ACCOUNT, 40); // Empties it: a top-up starts.
    pending('lease').answer({ o_status: 'moved' });
    await flush();
    expect(d.lease.stale).toBe(true);
    expect(errors).toEqual([]);

    const other = fakeBilling();
    const l2 = new CreditLeases(other.billing, { ...OPTS, onError: (_e, what) => errors.push(what) });
    l2.draw(TOKEN, ACCOUNT, 10);
    other.pending('lease').fail(new Error('timeout'));
    await flush();
    expect(errors).toEqual(['taking a credit lease']);
    // The stale lease blocks draws and top-ups until it is released.
    expect(l2.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    expect(other.of('lease')).toHaveLength(1);
    await l2.barrier();
    expect(other.of('release')).toHaveLength(1);
  });

  it('barrier() releases idle leases, keeps those with calls in flight, and waits for queued operations', async () => {
    const { leases, of, pending, calls } = await withLease();
    const busy = leases.draw(TOKEN, ACCOUNT, 10)!;
    await leases.barrier();
    expect(of('release')).toHaveLength(0);

    const p = leases.settle(busy, { quota: 5, entry }).outcome;
    let done = false;
    const barrier = leases.barrier().then(() => (done = true));
    // The lease had a call in flight until the settle above: now idle, it goes back.
    expect(of('release').map((c) => c.op)).toEqual([{ op: 'release', key: busy.lease.key }]);
    await flush();
    // The queued settle is not answered yet: the barrier waits for it.
    expect(done).toBe(false);
    pending('settle_lease').answer(settled(5));
    await barrier;
    await p;
    // The settle was submitted before the release, so the batcher runs it first.
    expect(calls.map((c) => c.op.op)).toEqual(['lease', 'settle_lease', 'release']);
    expect(leases.active).toBe(false);
    // A new lease has a new key.
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    expect(of('lease')[1].op).toMatchObject({ op: 'lease' });
    expect((of('lease')[1].op as { key: string }).key).not.toBe(busy.lease.key);
  });

  it('close() waits for calls in flight, then releases every lease and stops drawing', async () => {
    const { leases, of, pending, calls } = await withLease();
    const d = leases.draw(TOKEN, ACCOUNT, 10)!;
    let closed = false;
    const closing = leases.close().then(() => (closed = true));
    // Closed to new draws at once.
    expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
    await flush();
    expect(closed).toBe(false);
    expect(of('release')).toHaveLength(0);
    const p = leases.settle(d, { quota: 10, entry }).outcome;
    pending('settle_lease').answer(settled(10));
    await p;
    await until(() => closed);
    await closing;
    expect(of('release').map((c) => c.op)).toEqual([{ op: 'release', key: d.lease.key }]);
    // No top-up was started by the draw refused while closing.
    expect(calls.map((c) => c.op.op)).toEqual(['lease', 'settle_lease', 'release']);
  });

  it('close() and barrier() wait for a top-up in flight, then give that lease back too', async () => {
    for (const end of ['close', 'barrier'] as const) {
      const { billing, of, pending } = fakeBilling();
      const leases = new CreditLeases(billing, OPTS);
      expect(leases.draw(TOKEN, ACCOUNT, 10)).toBeNull();
      let done = false;
      const ending = leases[end]().then(() => (done = true));
      await flush();
      // The lease row may exist in the database once its top-up lands: the end waits for the answer.
      expect(done).toBe(false);
      pending('lease').answer({ o_status: 'ok' });
      await ending;
      expect(of('release').map((c) => c.op)).toEqual([{ op: 'release', key: of('lease')[0].op.key }]);
      expect(leases.active).toBe(false);
      if (end === 'barrier') await leases.close();
    }
  });
});
