import fs, { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BillingBatcher } from '../../src/domain/billing/batcher';
import { CreditLeases } from '../../src/domain/billing/credit-leases';
import { type BillingOperation, operationJson } from '../../src/domain/billing/operations';
import { FileSettleJournal } from '../../src/runtime/settle-journal-files';
import { waitFor } from '../helpers/wait';

/** A settle as billing_batch reads it (and the journal keeps it). */
interface EncodedSettle {
  op: 'settle_lease';
  portion: number;
  actual: number;
  entry: { request_id: string };
}

const entry = { requestId: 'req-1', model: 'm' };
const settleOp = (requestId: string) => operationJson({ op: 'settle_lease', key: 'lease:dead:1', portion: 5, actual: 5, account: 1, token: 2, entry: { requestId, model: 'm' } });
const requestIdOf = (line: string) => (JSON.parse(line) as EncodedSettle).entry.request_id;
const HEAD = `${JSON.stringify({ journal: 1, database: 'db' })}\n`;
const flush = () => new Promise((r) => setImmediate(r));

/** A batcher whose operations wait for the test: leases are granted at once, settles answered or failed by hand. */
function fakeBatcher() {
  const settles: { op: EncodedSettle; answer(): void; answerWith(row: object): void; fail(): void }[] = [];
  const batcher = {
    submit(op: BillingOperation) {
      return Promise.resolve({ o_status: op.op === 'release' ? 'released' : 'ok', o_refunded: 0 });
    },
    submitEncoded(json: string) {
      const op = JSON.parse(json) as EncodedSettle;
      return new Promise((resolve, reject) => {
        settles.push({
          op,
          answer: () => resolve({ o_status: 'settled', o_ledger_id: 1, o_billed: op.actual, o_shortfall: 0, o_from_lease: op.portion }),
          answerWith: (row: object) => resolve(row),
          fail: () => reject(new Error('connection lost')),
        });
      });
    },
    async idle() {},
  };
  return { batcher: batcher as unknown as BillingBatcher, settles };
}

describe('settle journal (files)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'settle-journal-'));
  });
  /** Every journal a test makes is closed after it: one that took a file over touches it on a timer. */
  const journals: FileSettleJournal[] = [];
  const track = (j: FileSettleJournal) => (journals.push(j), j);
  afterEach(() => {
    for (const j of journals.splice(0)) j.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const files = () => readdirSync(dir).sort();
  const lines = () => files().flatMap((f) => readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean));

  async function leaseWithCredit(journal: FileSettleJournal, batcher: BillingBatcher) {
    const leases = new CreditLeases(batcher, { journal, chunkCalls: 100, tickMs: 60_000 });
    expect(leases.draw(2, 1, 10)).toBeNull();
    await flush();
    return leases;
  }

  it('a lease settle is durable once its line is written, before PostgreSQL answers; the line goes when it does', async () => {
    const journal = track(new FileSettleJournal(dir, { database: 'db', segmentLines: 2 }));
    const { batcher, settles } = fakeBatcher();
    const leases = await leaseWithCredit(journal, batcher);
    const first = leases.settle(leases.draw(2, 1, 10)!, { quota: 7, entry });
    let durable = false;
    void first.durable.then(() => (durable = true));
    await flush();
    expect(durable).toBe(true);
    expect(settles).toHaveLength(1);
    expect(lines().map((l) => JSON.parse(l))).toEqual([{ journal: 1, database: 'db' }, settles[0].op]);

    // The second line fills the segment: it is closed, and deleted once both lines are answered.
    const second = leases.settle(leases.draw(2, 1, 10)!, { quota: 3, entry: { ...entry, requestId: 'req-2' } });
    settles[0].answer();
    await expect(first.outcome).resolves.toEqual({ status: 'settled', billed: 7, shortfall: 0 });
    expect(lines()).toHaveLength(3);
    settles[1].answer();
    await second.outcome;
    expect(files()).toEqual([]);
    journal.close();
  });

  it.each([
    ['fails', (s: { fail(): void }) => s.fail()],
    // A key rotation moved its budget under it: it billed nothing.
    ["is answered 'moved'", (s: { answerWith(row: object): void }) => s.answerWith({ o_status: 'moved', o_ledger_id: null, o_billed: 0, o_shortfall: 0, o_from_lease: 0 })],
  ])('a journaled settle that %s is retried, and its line kept, until PostgreSQL bills it', async (_what, firstAnswer) => {
    const journal = track(new FileSettleJournal(dir, { database: 'db' }));
    const { batcher, settles } = fakeBatcher();
    const leases = await leaseWithCredit(journal, batcher);
    const s = leases.settle(leases.draw(2, 1, 10)!, { quota: 7, entry });
    await s.durable;
    firstAnswer(settles[0]);
    await waitFor(() => settles.length >= 2, { message: 'the settle to be sent again' });
    expect(settles).toHaveLength(2);
    expect(settles[1].op).toEqual(settles[0].op);
    expect(lines()).toHaveLength(2);
    settles[1].answer();
    await expect(s.outcome).resolves.toMatchObject({ status: 'settled', billed: 7 });
    journal.close();
    expect(files()).toEqual([]);
  });

  it('without a journal (or when it cannot be written) the settle is durable only once PostgreSQL answered', async () => {
    const { batcher, settles } = fakeBatcher();
    const leases = new CreditLeases(batcher, { chunkCalls: 100, tickMs: 60_000 });
    leases.draw(2, 1, 10);
    await flush();
    const s = leases.settle(leases.draw(2, 1, 10)!, { quota: 7, entry });
    let durable = false;
    void s.durable.then(() => (durable = true), () => undefined);
    await flush();
    expect(durable).toBe(false);
    settles[0].fail();
    await expect(s.durable).rejects.toThrow('connection lost');
    await expect(s.outcome).rejects.toThrow('connection lost');
  });

  it("replays the settles of a process that is gone, once, and leaves a live process's segments alone", async () => {
    const dead = 'settles-999999999-1-1.jsonl';
    // The parent runs, but not since this start time: its pid was taken by another process, so this owner is gone.
    const reused = `settles-${process.ppid}-1-3.jsonl`;
    const live = `settles-${process.ppid}-0-2.jsonl`;
    writeFileSync(path.join(dir, dead), `${HEAD}${settleOp('a')}\n${settleOp('b')}\n{"op":"release","key":"x"}\n{"op":"settle_le`);
    writeFileSync(path.join(dir, reused), `${HEAD}${settleOp('c')}\n`);
    writeFileSync(path.join(dir, live), `${HEAD}${settleOp('d')}\n`);
    const journal = track(new FileSettleJournal(dir, { database: 'db' }));
    const replayed: string[] = [];
    const n = await journal.recover(async (op) => {
      replayed.push(requestIdOf(op));
      return { o_status: 'settled' };
    });
    expect(n).toBe(3);
    expect(replayed.sort()).toEqual(['a', 'b', 'c']);
    expect(files()).toEqual([live]);
    expect(await journal.recover(async () => ({ o_status: 'settled' }))).toBe(0);
  });

  it('a journal that cannot be written: the settle waits for its commit, and the failure is reported once', async () => {
    const blocked = path.join(dir, 'not-a-folder');
    writeFileSync(blocked, '');
    const errors: string[] = [];
    const journal = track(new FileSettleJournal(blocked, { database: 'db', onError: (_err, what) => errors.push(what) }));
    const { batcher, settles } = fakeBatcher();
    const leases = await leaseWithCredit(journal, batcher);
    const first = leases.settle(leases.draw(2, 1, 10)!, { quota: 7, entry });
    const second = leases.settle(leases.draw(2, 1, 10)!, { quota: 3, entry: { ...entry, requestId: 'req-2' } });
    let durable = false;
    void first.durable.then(() => (durable = true));
    await flush();
    expect(durable).toBe(false);
    expect(settles).toHaveLength(2);
    settles[0].answer();
    await first.durable;
    settles[1].answer();
    await second.durable;
    expect(errors).toEqual(['writing the settle journal (answers wait for their commits meanwhile)']);
  });

  it("never replays another database's segments; drops a dead process's segment cut short before its first line", async () => {
    writeFileSync(path.join(dir, 'settles-999999999-1-1.jsonl'), `${JSON.stringify({ journal: 1, database: 'other' })}\n${settleOp('a')}\n`);
    writeFileSync(path.join(dir, 'settles-999999999-1-2.jsonl'), '{"journal":1,"datab');
    const journal = track(new FileSettleJournal(dir, { database: 'db' }));
    expect(await journal.recover(async () => ({ o_status: 'settled' }))).toBe(0);
    expect(files()).toEqual(['settles-999999999-1-1.jsonl']);
  });

  it('makes its folder with its first line: a process that bills nothing writes nothing', async () => {
    const folder = path.join(dir, 'billing-journal');
    const journal = track(new FileSettleJournal(folder, { database: 'db' }));
    expect(await journal.recover(async () => ({ o_status: 'settled' }))).toBe(0);
    expect(files()).toEqual([]);
    expect(journal.append(settleOp('a'))).not.toBeNull();
    expect(readdirSync(folder)).toHaveLength(1);
    journal.close();
  });

  it('a replay PostgreSQL did not answer stays with the process that took it over and is replayed again', async () => {
    writeFileSync(path.join(dir, 'settles-999999999-1-1.jsonl'), `${HEAD}${settleOp('a')}\n`);
    const errors: string[] = [];
    const failing = track(new FileSettleJournal(dir, { database: 'db', onError: (err, what) => errors.push(`${what}: ${(err as Error).message}`) }));
    expect(await failing.recover(async () => Promise.reject(new Error('database down')))).toBe(0);
    expect(errors).toEqual(['replaying settles-999999999-1-1.jsonl (kept for the next pass): database down']);
    expect(files()).toEqual([expect.stringMatching(new RegExp(`^settles-s[0-9a-f]+-${process.pid}-\\d+-r\\d+\\.jsonl$`))]);
    // Taken over by this process: only this process replays it again.
    const replayed: string[] = [];
    expect(await failing.recover(async (op) => (replayed.push(requestIdOf(op)), { o_status: 'duplicate' }))).toBe(1);
    expect(replayed).toEqual(['a']);
    expect(files()).toEqual([]);
  });
  it('one segment that cannot be replayed never holds up the others', async () => {
    writeFileSync(path.join(dir, 'settles-999999998-1-1.jsonl'), `${HEAD}${settleOp('a')}\n`);
    writeFileSync(path.join(dir, 'settles-999999999-1-1.jsonl'), `${HEAD}${settleOp('b')}\n`);
    const errors: string[] = [];
    const journal = track(new FileSettleJournal(dir, { database: 'db', onError: (_err, what) => errors.push(what) }));
    const replayed: string[] = [];
    const n = await journal.recover(async (op) => {
      if (requestIdOf(op) === 'a') throw new Error('integer out of range');
      replayed.push(requestIdOf(op));
      return { o_status: 'settled' };
    });
    expect(n).toBe(1);
    expect(replayed).toEqual(['b']);
    expect(errors).toEqual(['replaying settles-999999998-1-1.jsonl (kept for the next pass)']);
    expect(files()).toHaveLength(1);
  });

  it("a replayed settle that billed nothing ('moved') keeps its file for the next pass", async () => {
    writeFileSync(path.join(dir, 'settles-999999999-1-1.jsonl'), `${HEAD}${settleOp('a')}\n${settleOp('b')}\n`);
    const errors: string[] = [];
    const journal = track(new FileSettleJournal(dir, { database: 'db', onError: (err, what) => errors.push(`${what}: ${(err as Error).message}`) }));
    expect(await journal.recover(async (op) => ({ o_status: requestIdOf(op) === 'a' ? 'moved' : 'settled' }))).toBe(0);
    expect(errors).toEqual(["replaying settles-999999999-1-1.jsonl (kept for the next pass): a replayed settle was answered 'moved'"]);
    expect(files()).toHaveLength(1);
    expect(await journal.recover(async (op) => ({ o_status: requestIdOf(op) === 'a' ? 'settled' : 'duplicate' }))).toBe(2);
    expect(files()).toEqual([]);
  });

  it("another container's segments (its pids are not this one's to ask about) wait until they go untouched", async () => {
    // A live process of another scope: its pid means nothing here, but it touches its file.
    const other = 'settles-s0123456789ab-1-1-1.jsonl';
    writeFileSync(path.join(dir, other), `${HEAD}${settleOp('a')}\n`);
    const journal = track(new FileSettleJournal(dir, { database: 'db', staleMs: 5_000 }));
    const replayed: string[] = [];
    const submit = async (op: string) => (replayed.push(requestIdOf(op)), { o_status: 'settled' });
    expect(await journal.recover(submit)).toBe(0);
    expect(files()).toEqual([other]);
    // Untouched for longer than staleMs: its owner is gone.
    const old = new Date(Date.now() - 10_000);
    utimesSync(path.join(dir, other), old, old);
    expect(await journal.recover(submit)).toBe(1);
    expect(replayed).toEqual(['a']);
    expect(files()).toEqual([]);
  });

  it('a segment it takes over is touched at once, so no other scope takes it while it is being replayed', async () => {
    const other = 'settles-s0123456789ab-1-1-1.jsonl';
    writeFileSync(path.join(dir, other), `${HEAD}${settleOp('a')}\n`);
    const old = new Date(Date.now() - 10_000);
    utimesSync(path.join(dir, other), old, old);
    const journal = track(new FileSettleJournal(dir, { database: 'db', staleMs: 5_000 }));
    let claimed: string[] = [];
    await journal.recover(async () => {
      claimed = files();
      throw new Error('database down');
    });
    expect(claimed).toEqual([expect.stringMatching(/-r\d+\.jsonl$/)]);
    expect(Date.now() - statSync(path.join(dir, claimed[0])).mtimeMs).toBeLessThan(5_000);
  });

  it('touches the files it holds, so another scope never takes them while it lives; names them with its scope', async () => {
    const journal = track(new FileSettleJournal(dir, { database: 'db', heartbeatMs: 20 }));
    expect(journal.append(settleOp('a'))).not.toBeNull();
    const [name] = files();
    expect(name).toMatch(new RegExp(`^settles-s[0-9a-f]{12}-${process.pid}-\\d+-\\d+\\.jsonl$`));
    const old = new Date(Date.now() - 600_000);
    utimesSync(path.join(dir, name), old, old);
    await waitFor(() => Date.now() - statSync(path.join(dir, name)).mtimeMs < 5_000, { message: 'the heartbeat to touch the journal' });
    expect(Date.now() - statSync(path.join(dir, name)).mtimeMs).toBeLessThan(5_000);
    journal.close();
  });

  it('a segment that cannot take its first line whole is never used: the settle waits for its commit', () => {
    const errors: string[] = [];
    const journal = track(new FileSettleJournal(dir, { database: 'db', onError: (_err, what) => errors.push(what) }));
    const write = jest.spyOn(fs, 'writeSync').mockImplementationOnce(() => 3);
    try {
      expect(journal.append(settleOp('a'))).toBeNull();
    } finally {
      write.mockRestore();
    }
    expect(files()).toEqual([]);
    expect(errors).toEqual(['writing the settle journal (answers wait for their commits meanwhile)']);
    // The next call opens a whole segment.
    expect(journal.append(settleOp('b'))).not.toBeNull();
    expect(lines()).toEqual([HEAD.trim(), settleOp('b')]);
    journal.close();
  });
});
