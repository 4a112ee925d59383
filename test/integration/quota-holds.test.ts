// test modes: postgres, embedded
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { formatError } from '../../src/schemas/error-families';
import { toWireError } from '../../src/schemas/wire-error';
import { inTransaction } from '../../src/db/pool';
import { ConflictError, QuotaExhaustedError, ValidationError } from '../../src/domain/errors';
import { KeyCipher } from '../../src/domain/keys/key-material';
import { createTokenService } from '../../src/domain/keys/tokens';
import { BillingService } from '../../src/domain/billing/billing-service';
import { release, reserve, settle } from '../../src/domain/billing/holds';
import { sweepExpiredHolds } from '../../src/domain/billing/sweeper';
import { plainUsage } from '../../src/domain/pricing/usage';
import { newAccount, TEST_SECRET } from '../helpers/harness';
import { openTestPool, TestPool } from '../helpers/test-database';
import { createRepositories } from '../../src/db/repositories';
import { createHoldRepository } from '../../src/db/repositories/holds';
import { txOf } from '../../src/db/repositories/queryable';

/** Quota holds against the real database: exact money under concurrency, idempotent by business key. */
describe('quota holds', () => {
  let database: TestPool;
  let db: Pool;
  let tokens: ReturnType<typeof createTokenService>;
  beforeAll(async () => {
    database = await openTestPool(20);
    db = database.pool;
    tokens = createTokenService({ repos: createRepositories(db), cipher: new KeyCipher(TEST_SECRET), publishKeyChange: async () => {}, afterKeyChange: async () => {} });
  });
  afterAll(async () => {
    await database.close();
  });

  const key = (p = 'hold') => `${p}:${randomUUID()}`;

  async function setup(settings: Record<string, unknown>, wallet: number | null = null) {
    const acct = await newAccount(db);
    if (wallet !== null) await db.query('UPDATE accounts SET quota = $2 WHERE id = $1', [acct.id, wallet]);
    const token = await tokens.create(acct.id, settings);
    return { accountId: acct.id, tokenId: token.id, tokenName: token.name };
  }

  async function balances(t: { accountId: number; tokenId: number }) {
    const tok = await db.query('SELECT remain_quota, used_quota FROM tokens WHERE id = $1', [t.tokenId]);
    const acc = await db.query('SELECT quota, used_quota FROM accounts WHERE id = $1', [t.accountId]);
    const holds = await db.query<{ n: number; sum: number }>(
      'SELECT count(*)::int AS n, COALESCE(sum(amount), 0)::bigint AS sum FROM quota_holds WHERE account_id = $1',
      [t.accountId],
    );
    const ledger = await db.query<{ n: number; sum: number }>(
      'SELECT count(*)::int AS n, COALESCE(sum(quota), 0)::bigint AS sum FROM ledger WHERE account_id = $1',
      [t.accountId],
    );
    return {
      remain: tok.rows[0].remain_quota as number,
      used: tok.rows[0].used_quota as number,
      wallet: acc.rows[0].quota as number | null,
      walletUsed: acc.rows[0].used_quota as number,
      holds: holds.rows[0].n,
      held: holds.rows[0].sum,
      ledgerRows: ledger.rows[0].n,
      billed: ledger.rows[0].sum,
    };
  }

  const hold = (t: { accountId: number; tokenId: number }, amount: number, businessKey = key(), ttlSeconds = 600) =>
    reserve(createHoldRepository(db), { businessKey, accountId: t.accountId, tokenId: t.tokenId, amount, reason: 'test', ttlSeconds });

  it('(a) a key created with neither remain_quota nor unlimited_quota cannot reserve: 429 insufficient_quota, nothing written', async () => {
    const t = await setup({ name: 'no-quota' });
    expect(await balances(t)).toMatchObject({ remain: 0, holds: 0 });
    for (const amount of [1, 0]) {
      const err = await hold(t, amount).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(QuotaExhaustedError);
      const wire = toWireError(err);
      expect(wire.status).toBe(429);
      expect(formatError('openai', wire)).toEqual({
        error: { message: expect.any(String), type: 'insufficient_quota', param: null, code: 'insufficient_quota' },
      });
    }
    expect(await balances(t)).toMatchObject({ remain: 0, used: 0, holds: 0, ledgerRows: 0 });
  });

  it('(b) 200 concurrent reserves of 10 against 1000 credits: exactly 100 succeed, never below 0', async () => {
    const t = await setup({ remain_quota: 1000 });
    const results = await Promise.allSettled(Array.from({ length: 200 }, () => hold(t, 10)));
    const ok = results.filter((r) => r.status === 'fulfilled');
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(100);
    for (const f of failed) expect(f.reason).toBeInstanceOf(QuotaExhaustedError);
    expect(await balances(t)).toMatchObject({ remain: 0, used: 0, holds: 100, held: 1000 });
    const min = await db.query('SELECT min(remain_quota)::bigint AS m FROM tokens WHERE id = $1', [t.tokenId]);
    expect(min.rows[0].m).toBe(0);
  });

  it('(b) the account wallet caps an unlimited key the same way, and a failing wallet leaves the key untouched', async () => {
    const t = await setup({ unlimited_quota: true, remain_quota: 0 }, 505);
    const results = await Promise.allSettled(Array.from({ length: 80 }, () => hold(t, 10)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(50);
    const b = await balances(t);
    expect(b).toMatchObject({ wallet: 5, holds: 50, held: 500 });
    // Unlimited keys are debited too (so refunds mirror debits); only failed reserves left it alone.
    expect(b.remain).toBe(-500);

    const limited = await setup({ remain_quota: 1000 }, 5);
    await expect(hold(limited, 10)).rejects.toBeInstanceOf(QuotaExhaustedError);
    expect(await balances(limited)).toMatchObject({ remain: 1000, wallet: 5, holds: 0 });
  });

  it('a reserve against an unlimited wallet writes nothing to the account row; a limited wallet is debited', async () => {
    const t = await setup({ unlimited_quota: true });
    const version = async () => (await db.query<{ v: string }>('SELECT xmin::text AS v FROM accounts WHERE id = $1', [t.accountId])).rows[0].v;
    const before = await version();
    await hold(t, 10);
    await hold(t, 20);
    expect(await version()).toBe(before);
    expect(await balances(t)).toMatchObject({ wallet: null, holds: 2, held: 30 });
    await db.query('UPDATE accounts SET quota = 25 WHERE id = $1', [t.accountId]);
    await hold(t, 20);
    await expect(hold(t, 10)).rejects.toBeInstanceOf(QuotaExhaustedError);
    expect(await balances(t)).toMatchObject({ wallet: 5, holds: 3, held: 50 });
  });

  it('reserve is idempotent by business key: the same key twice is one hold and one debit', async () => {
    const t = await setup({ remain_quota: 1000 });
    const bk = key();
    const [h1, h2] = await Promise.all([hold(t, 300, bk), hold(t, 300, bk)]);
    expect(h1.id).toBe(h2.id);
    expect([h1.created, h2.created].sort()).toEqual([false, true]);
    const h3 = await hold(t, 300, bk);
    expect(h3).toMatchObject({ id: h1.id, created: false, amount: 300, businessKey: bk });
    expect(await balances(t)).toMatchObject({ remain: 700, holds: 1 });
    await expect(hold(t, 301, bk)).rejects.toBeInstanceOf(ConflictError);
  });

  it('(c) settle bills once; actual < reserved refunds the difference; one ledger row', async () => {
    const t = await setup({ remain_quota: 1000, name: 'billing-key' });
    const bk = key('req');
    await hold(t, 300, bk);
    const requestId = `req_${randomUUID()}`;
    const fields = {
      requestId, model: 'gpt-4o', tokenName: t.tokenName, channelId: null, usage: plainUsage(12, 34),
      units: 0, latencyMs: 87.4,
    };
    await expect(settle(createHoldRepository(db), bk, { ...fields, actualAmount: 301 })).rejects.toBeInstanceOf(ValidationError);
    expect(await balances(t)).toMatchObject({ remain: 700, holds: 1, ledgerRows: 0 });

    const [first, second] = await Promise.all([
      settle(createHoldRepository(db), bk, { ...fields, actualAmount: 120 }),
      settle(createHoldRepository(db), bk, { ...fields, actualAmount: 120 }),
    ]);
    const statuses = [first.status, second.status].sort();
    expect(statuses).toEqual(['already_settled', 'settled']);
    const settled = [first, second].find((r) => r.status === 'settled');
    expect(settled).toMatchObject({ billed: 120, refunded: 180 });
    expect(await settle(createHoldRepository(db), bk, { ...fields, actualAmount: 120 })).toEqual({ status: 'already_settled' });
    expect(await release(createHoldRepository(db), bk)).toEqual({ status: 'not_found' });

    expect(await balances(t)).toEqual({
      remain: 880, used: 120, wallet: null, walletUsed: 120, holds: 0, held: 0, ledgerRows: 1, billed: 120,
    });
    const row = await db.query('SELECT * FROM ledger WHERE request_id = $1', [requestId]);
    expect(row.rows[0]).toMatchObject({
      account_id: t.accountId, token_id: t.tokenId, token_name: 'billing-key', model: 'gpt-4o', prompt_tokens: 12,
      completion_tokens: 34, units: 0, quota: 120, latency_ms: 87, task_id: null,
    });
  });

  it('(c) a second hold for an already billed request or task is released instead of billed', async () => {
    const t = await setup({ remain_quota: 1000 });
    const taskId = `task_${randomUUID()}`;
    const a = key('task');
    const b = key('task');
    await hold(t, 100, a);
    await hold(t, 100, b);
    expect(await settle(createHoldRepository(db), a, { requestId: `req_${randomUUID()}`, taskId, model: 'video3', units: 1, actualAmount: 100 })).toMatchObject({ status: 'settled' });
    expect(await settle(createHoldRepository(db), b, { requestId: `req_${randomUUID()}`, taskId, model: 'video3', units: 1, actualAmount: 100 })).toEqual({
      status: 'duplicate',
      refunded: 100,
    });
    expect(await balances(t)).toMatchObject({ remain: 900, used: 100, holds: 0, ledgerRows: 1, billed: 100 });
  });

  it('(c) release returns everything and writes no ledger row; settle and release racing: exactly one wins', async () => {
    const t = await setup({ remain_quota: 1000 }, 1000);
    const bk = key();
    await hold(t, 400, bk);
    expect(await balances(t)).toMatchObject({ remain: 600, wallet: 600 });
    expect(await release(createHoldRepository(db), bk)).toEqual({ status: 'released', refunded: 400 });
    expect(await release(createHoldRepository(db), bk)).toEqual({ status: 'not_found' });
    expect(await settle(createHoldRepository(db), bk, { requestId: `req_${randomUUID()}`, model: 'm', actualAmount: 1 })).toEqual({ status: 'not_found' });
    expect(await balances(t)).toMatchObject({ remain: 1000, used: 0, wallet: 1000, walletUsed: 0, holds: 0, ledgerRows: 0 });

    for (let i = 0; i < 10; i++) {
      const k = key();
      await hold(t, 50, k);
      const [s, r] = await Promise.all([
        settle(createHoldRepository(db), k, { requestId: `req_${randomUUID()}`, model: 'm', actualAmount: 50 }),
        release(createHoldRepository(db), k),
      ]);
      expect([s.status === 'settled', r.status === 'released'].filter(Boolean)).toHaveLength(1);
    }
    const b = await balances(t);
    expect(b.holds).toBe(0);
    expect(b.remain + b.used).toBe(1000);
    expect(b.wallet! + b.walletUsed).toBe(1000);
    expect(b.used).toBe(b.billed);
  });

  it('(d) expired holds are swept back to the balances; a later settle bills nothing', async () => {
    const t = await setup({ remain_quota: 1000 }, 2000);
    const expiring = key();
    const live = key();
    await hold(t, 250, expiring, 1);
    await hold(t, 100, live, 3600);
    await db.query(`UPDATE quota_holds SET expires_at = now() - interval '1 second' WHERE business_key = $1`, [expiring]);
    expect(await sweepExpiredHolds(createHoldRepository(db))).toBeGreaterThanOrEqual(1);
    expect(await balances(t)).toMatchObject({ remain: 900, wallet: 1900, holds: 1, held: 100 });
    expect(await settle(createHoldRepository(db), expiring, { requestId: `req_${randomUUID()}`, model: 'm', actualAmount: 250 })).toEqual({ status: 'not_found' });
    expect(await balances(t)).toMatchObject({ remain: 900, used: 0, ledgerRows: 0 });
  });

  it('inside a caller transaction, a failed reserve rolls back only its own writes', async () => {
    const t = await setup({ remain_quota: 100 }, 50);
    await inTransaction(db, async (tx) => {
      await expect(
        reserve(createHoldRepository(db), { businessKey: key(), accountId: t.accountId, tokenId: t.tokenId, amount: 80, reason: 'tx', ttlSeconds: 60 }, txOf(tx)),
      ).rejects.toBeInstanceOf(QuotaExhaustedError);
      const ok = await reserve(createHoldRepository(db), { businessKey: key(), accountId: t.accountId, tokenId: t.tokenId, amount: 30, reason: 'tx', ttlSeconds: 60 }, txOf(tx));
      expect(ok.created).toBe(true);
    });
    expect(await balances(t)).toMatchObject({ remain: 70, wallet: 20, holds: 1 });
  });

  describe('group commit (BillingBatcher)', () => {
    it('concurrent reserves on one key: exactly what fits, one refusal never affects another; settles and releases exact', async () => {
      const t = await setup({ remain_quota: 100 }, 1_000);
      const billing = new BillingService(createHoldRepository(db), { leases: false });
      const keys = Array.from({ length: 30 }, () => key('batch'));
      const results = await Promise.allSettled(
        keys.map((k) => billing.reserveHold({ businessKey: k, accountId: t.accountId, tokenId: t.tokenId, amount: 10, reason: 'test', ttlSeconds: 600 })),
      );
      const ok = keys.filter((_, i) => results[i].status === 'fulfilled');
      expect(ok).toHaveLength(10);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(QuotaExhaustedError);
      expect(await balances(t)).toMatchObject({ remain: 0, wallet: 900, holds: 10, held: 100 });

      const settled = await Promise.all(
        ok.slice(0, 6).map((k, i) => billing.settleHold(k, { actualAmount: i, requestId: k, model: 'm', tokenName: t.tokenName })),
      );
      expect(settled.map((s) => s.status)).toEqual(Array(6).fill('settled'));
      const released = await Promise.all(ok.slice(6).map((k) => billing.releaseHold(k)));
      expect(released.map((r) => r.status)).toEqual(Array(4).fill('released'));
      // A repeat is idempotent: nothing billed or refunded twice.
      expect(await billing.settleHold(ok[0], { actualAmount: 0, requestId: ok[0], model: 'm' })).toEqual({ status: 'already_settled' });
      expect(await billing.releaseHold(ok[9])).toEqual({ status: 'not_found' });
      await billing.batcher.idle();
      const billed = 0 + 1 + 2 + 3 + 4 + 5;
      expect(await balances(t)).toEqual({ remain: 100 - billed, used: billed, wallet: 1_000 - billed, walletUsed: billed, holds: 0, held: 0, ledgerRows: 6, billed });
    });

    it('a batch that fails as a whole is run one operation at a time: the others still get their answer', async () => {
      const t = await setup({ remain_quota: 100 });
      const billing = new BillingService(createHoldRepository(db), { leases: false });
      const good = [key('batch'), key('batch'), key('batch')];
      // A NULL account id breaks the whole statement (NOT NULL violation, not a refusal).
      const outcomes = await Promise.allSettled([
        ...good.map((k) => billing.reserveHold({ businessKey: k, accountId: t.accountId, tokenId: t.tokenId, amount: 5, reason: 'test', ttlSeconds: 600 })),
        billing.reserveHold({ businessKey: key('bad'), accountId: null as unknown as number, tokenId: t.tokenId, amount: 5, reason: 'test', ttlSeconds: 600 }),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
      expect(await balances(t)).toMatchObject({ remain: 85, holds: 3, held: 15 });
    });

    it('two batchers (two replicas) on keys of one account, in opposite orders: every operation completes, exact', async () => {
      const acct = await setup({ remain_quota: 10_000 }, 100_000);
      const other = await tokens.create(acct.accountId, { remain_quota: 10_000 });
      const a = { accountId: acct.accountId, tokenId: acct.tokenId };
      const b = { accountId: acct.accountId, tokenId: other.id };
      const one = new BillingService(createHoldRepository(db), { leases: false });
      const two = new BillingService(createHoldRepository(db), { leases: false });
      const reserveOn = (billing: BillingService, t: { accountId: number; tokenId: number }) => {
        const k = key('pair');
        return billing.reserveHold({ businessKey: k, ...t, amount: 7, reason: 'test', ttlSeconds: 600 }).then(() => k);
      };
      const keys = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? [reserveOn(one, a), reserveOn(two, b)] : [reserveOn(one, b), reserveOn(two, a)])).flat(),
      );
      await Promise.all(keys.map((k, i) => (i % 2 === 0 ? one : two).settleHold(k, { actualAmount: 3, requestId: k, model: 'm' })));
      const sum = await db.query<{ remain: string }>('SELECT sum(remain_quota) AS remain FROM tokens WHERE user_id = $1', [acct.accountId]);
      expect(Number(sum.rows[0].remain)).toBe(20_000 - 3 * keys.length);
      expect(await balances(acct)).toMatchObject({ wallet: 100_000 - 3 * keys.length, holds: 0, ledgerRows: keys.length, billed: 3 * keys.length });
    });

    it('settle without chargeExcess still refuses an amount above the hold and leaves the hold in place', async () => {
      const t = await setup({ remain_quota: 100 });
      const billing = new BillingService(createHoldRepository(db), { leases: false });
      const k = key('batch');
      await billing.reserveHold({ businessKey: k, accountId: t.accountId, tokenId: t.tokenId, amount: 10, reason: 'test', ttlSeconds: 600 });
      await expect(billing.settleHold(k, { actualAmount: 11, requestId: k, model: 'm' })).rejects.toBeInstanceOf(ValidationError);
      expect(await balances(t)).toMatchObject({ remain: 90, holds: 1, held: 10, ledgerRows: 0 });
    });

    it('a batch that creates a video task commits synchronously; a batch of relay holds alone does not', async () => {
      const t = await setup({ remain_quota: 1000 });
      // billing_batch's settings last until its transaction ends: read them inside it, then roll back.
      const commitSetting = async (ops: unknown[]) => {
        const client = await db.connect();
        try {
          await client.query('BEGIN');
          await client.query('SELECT billing_batch($1::jsonb)', [JSON.stringify(ops)]);
          return (await client.query<{ v: string }>("SELECT current_setting('synchronous_commit') AS v")).rows[0].v;
        } finally {
          await client.query('ROLLBACK');
          client.release();
        }
      };
      const hold = (op: string) => ({ op, key: key('sync'), account: t.accountId, token: t.tokenId, amount: 10, reason: 'test', ttl: 600 });
      const video = () => {
        const h = hold('video_submit');
        const id = `video_${randomUUID().replace(/-/g, '')}`;
        return { ...h, task: { id, family: 'A', account: t.accountId, token: t.tokenId, token_name: t.tokenName, model: 'video-3.1', prompt: 'p', request: {}, channel: 'va', amount: 10, request_id: id, task_queue: 'q' } };
      };
      expect(await commitSetting([hold('reserve'), hold('reserve')])).toBe('off');
      expect(await commitSetting([hold('reserve'), video(), hold('reserve')])).toBe('on');
      // A refused submit created nothing, so nothing needs the wait.
      await db.query('UPDATE tokens SET remain_quota = 5 WHERE id = $1', [t.tokenId]);
      expect(await commitSetting([video()])).toBe('off');
      expect(await balances(t)).toMatchObject({ remain: 5, holds: 0, ledgerRows: 0 });
    });
  });
});
