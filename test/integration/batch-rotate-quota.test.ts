// test modes: postgres, embedded
import { randomUUID } from 'node:crypto';
import { InvalidApiKeyError, QuotaExhaustedError } from '../../src/domain/errors';
import { release, reserve, settle } from '../../src/domain/billing/holds';
import { sweepExpiredHolds } from '../../src/domain/billing/sweeper';
import { http, newAccount, startWorker, TestGateway } from '../helpers/harness';
import { allBatchKeys, waitForBatch, startBatchStack } from '../helpers/worker-batches';
import { createHoldRepository } from '../../src/db/repositories/holds';

/**
 * A rotation must not double the money: during the grace period the old key (still enabled) and its
 * replacement spend one balance, and refunds of holds go back to that balance.
 */
describe('rotation moves the key budget instead of copying it', () => {
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

  const hold = (tokenId: number, amount: number, businessKey = `t:${randomUUID()}`) =>
    reserve(createHoldRepository(gw.db), { businessKey, accountId: acct.id, tokenId, amount, reason: 'test', ttlSeconds: 600 });

  async function balance(tokenId: number): Promise<{ remain: number; used: number; held: number }> {
    const { rows } = await gw.db.query(
      `SELECT remain_quota AS remain, used_quota AS used,
         (SELECT COALESCE(sum(amount), 0)::bigint FROM quota_holds WHERE token_id = t.id) AS held
       FROM tokens t WHERE id = $1`,
      [tokenId],
    );
    return rows[0];
  }

  async function issue(count: number, settings: Record<string, unknown>): Promise<{ id: number; keys: any[] }> {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count, name: `q${count}`, ...settings } });
    expect(res.status).toBe(202);
    await waitForBatch(gw.baseUrl, auth, res.body.data.id);
    return { id: res.body.data.id, keys: await allBatchKeys(gw.baseUrl, auth, res.body.data.id) };
  }

  /** Starts a rotation and waits for its grace period (or its end when grace is 0); returns the replacements. */
  async function rotate(source: number, graceSeconds: number): Promise<{ id: number; keys: any[] }> {
    const res = await http(gw.baseUrl, 'POST', `/api/token/batch/${source}/rotate`, { auth, body: { grace_seconds: graceSeconds } });
    expect(res.status).toBe(202);
    await waitForBatch(gw.baseUrl, auth, res.body.data.id, { until: (b) => b.phase === 'grace' || b.status !== 'running' });
    return { id: res.body.data.id, keys: await allBatchKeys(gw.baseUrl, auth, res.body.data.id) };
  }

  const cancel = (id: number) => http(gw.baseUrl, 'DELETE', `/api/token/batch/${id}`, { auth });

  async function limitUsd(key: string): Promise<number> {
    const res = await http(gw.baseUrl, 'GET', '/v1/dashboard/billing/subscription', { auth: `Bearer sk-${key}` });
    expect(res.status).toBe(200);
    return res.body.hard_limit_usd;
  }

  it('old key with 1000 credits, long grace: 600 on the old key, then 600 on the new key is refused; never more than 1000 in all', async () => {
    const source = await issue(1, { remain_quota: 1000 });
    const old = source.keys[0];
    const rot = await rotate(source.id, 3600);
    const fresh = rot.keys[0];
    expect(fresh).toMatchObject({ remain_quota: 1000, unlimited_quota: false, status: 1 });
    expect(old.status).toBe(1);

    const a = await hold(old.id, 600);
    await expect(hold(fresh.id, 600)).rejects.toBeInstanceOf(QuotaExhaustedError);
    await expect(hold(old.id, 401)).rejects.toBeInstanceOf(QuotaExhaustedError);
    const b = await hold(fresh.id, 400);
    await expect(hold(old.id, 1)).rejects.toBeInstanceOf(QuotaExhaustedError);
    await expect(hold(fresh.id, 1)).rejects.toBeInstanceOf(QuotaExhaustedError);
    expect(await balance(fresh.id)).toEqual({ remain: 0, used: 0, held: 400 });
    expect(await balance(old.id)).toEqual({ remain: 0, used: 0, held: 600 });

    // Settling bills the old key (per-key usage) and refunds the rest to the shared budget; so does release.
    expect(await settle(createHoldRepository(gw.db), a.businessKey, { requestId: `req_${randomUUID()}`, model: 'm', actualAmount: 100 })).toMatchObject({
      status: 'settled', billed: 100, refunded: 500,
    });
    expect(await balance(fresh.id)).toEqual({ remain: 500, used: 0, held: 400 });
    expect(await release(createHoldRepository(gw.db), b.businessKey)).toEqual({ status: 'released', refunded: 400 });
    expect(await balance(fresh.id)).toEqual({ remain: 900, used: 0, held: 0 });
    expect(await balance(old.id)).toEqual({ remain: 0, used: 100, held: 0 });
    const ledger = await gw.db.query('SELECT token_id, quota FROM ledger WHERE account_id = $1 AND token_id = $2', [acct.id, old.id]);
    expect(ledger.rows).toEqual([{ token_id: old.id, quota: 100 }]);

    // The balance endpoint reports the shared remaining for both keys (plus each key's own usage).
    expect(await limitUsd(old.key)).toBe((900 + 100) / 500_000);
    expect(await limitUsd(fresh.key)).toBe(900 / 500_000);

    // Concurrent reserves on both keys against the 900 left: exactly 18 of 50 credits, never below 0.
    const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => hold(i % 2 ? old.id : fresh.id, 50)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(18);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(QuotaExhaustedError);
    const f = await balance(fresh.id);
    const o = await balance(old.id);
    expect(f.remain).toBe(0);
    expect(o.remain).toBe(0);
    expect(f.held + o.held).toBe(900);

    await cancel(rot.id);
  });

  it('holds taken on the old key before the rotation refund to the shared budget', async () => {
    const source = await issue(1, { remain_quota: 1000 });
    const old = source.keys[0];
    const h1 = await hold(old.id, 300);
    const h2 = await hold(old.id, 200);
    const rot = await rotate(source.id, 3600);
    const fresh = rot.keys[0];
    // The replacement took over what was left; the old key keeps nothing of its own.
    expect(fresh.remain_quota).toBe(500);
    expect((await balance(old.id)).remain).toBe(0);

    expect(await release(createHoldRepository(gw.db), h1.businessKey)).toEqual({ status: 'released', refunded: 300 });
    expect(await settle(createHoldRepository(gw.db), h2.businessKey, { requestId: `req_${randomUUID()}`, model: 'm', actualAmount: 50 })).toMatchObject({
      status: 'settled', refunded: 150,
    });
    expect(await balance(fresh.id)).toEqual({ remain: 950, used: 0, held: 0 });
    expect(await balance(old.id)).toEqual({ remain: 0, used: 50, held: 0 });
    await expect(hold(old.id, 951)).rejects.toBeInstanceOf(QuotaExhaustedError);
    await hold(old.id, 950);
    await expect(hold(fresh.id, 1)).rejects.toBeInstanceOf(QuotaExhaustedError);
    await cancel(rot.id);
  });

  it('money is conserved when reserves race the rotation itself', async () => {
    const source = await issue(100, { remain_quota: 100 });
    const res = await http(gw.baseUrl, 'POST', `/api/token/batch/${source.id}/rotate`, { auth, body: { grace_seconds: 3600 } });
    expect(res.status).toBe(202);
    const rot = res.body.data.id;
    // Hammer the old keys while the replacements are being issued.
    let stop = false;
    const hammer = async () => {
      let ok = 0;
      while (!stop) {
        const k = source.keys[Math.floor(Math.random() * source.keys.length)];
        try {
          await hold(k.id, 7);
          ok++;
        } catch (err) {
          if (!(err instanceof QuotaExhaustedError)) throw err;
        }
      }
      return ok;
    };
    const hammers = Array.from({ length: 6 }, hammer);
    await waitForBatch(gw.baseUrl, auth, rot, { until: (b) => b.phase === 'grace' || b.status !== 'running', intervalMs: 50 });
    stop = true;
    const reserved = (await Promise.all(hammers)).reduce((a, b) => a + b, 0);
    expect(reserved).toBeGreaterThan(0);

    const fresh = await allBatchKeys(gw.baseUrl, auth, rot);
    expect(fresh).toHaveLength(100);
    const freshByName = new Map(fresh.map((k) => [k.name, k]));
    let total = 0;
    for (const o of source.keys) {
      const n = freshByName.get(o.name)!;
      const [ob, nb] = await Promise.all([balance(o.id), balance(n.id)]);
      // Per key pair: what is left plus what is held is exactly the 100 the old key started with.
      expect([o.name, ob.remain + nb.remain + ob.held + nb.held]).toEqual([o.name, 100]);
      expect(ob.remain).toBe(0);
      total += ob.held;
    }
    expect(total).toBe(reserved * 7);
    await cancel(rot);
  });

  it('deleting the replacement leaves the old key on its own, empty balance', async () => {
    const source = await issue(1, { remain_quota: 1000 });
    const old = source.keys[0];
    const rot = await rotate(source.id, 3600);
    const fresh = rot.keys[0];
    const h = await hold(old.id, 100);
    const del = await http(gw.baseUrl, 'DELETE', `/api/token/${fresh.id}`, { auth });
    expect(del.status).toBe(200);
    await expect(hold(old.id, 1)).rejects.toBeInstanceOf(QuotaExhaustedError);
    // The refund has no budget to go back to: it is not credited to the old key.
    expect(await release(createHoldRepository(gw.db), h.businessKey)).toEqual({ status: 'released', refunded: 100 });
    expect(await balance(old.id)).toEqual({ remain: 0, used: 0, held: 0 });
    await expect(hold(old.id, 1)).rejects.toBeInstanceOf(QuotaExhaustedError);
    await cancel(rot.id);
  });

  it('an expired hold on the old key is swept back to the shared budget', async () => {
    const source = await issue(1, { remain_quota: 1000 });
    const old = source.keys[0];
    const rot = await rotate(source.id, 3600);
    const fresh = rot.keys[0];
    const h = await hold(old.id, 250);
    await gw.db.query(`UPDATE quota_holds SET expires_at = now() - interval '1 second' WHERE business_key = $1`, [h.businessKey]);
    expect(await sweepExpiredHolds(createHoldRepository(gw.db))).toBeGreaterThanOrEqual(1);
    expect(await balance(fresh.id)).toEqual({ remain: 1000, used: 0, held: 0 });
    expect(await balance(old.id)).toEqual({ remain: 0, used: 0, held: 0 });
    await cancel(rot.id);
  });

  it('deleting replacements while their old keys reserve, settle and release never deadlocks and never creates money', async () => {
    const source = await issue(20, { remain_quota: 1000 });
    const rot = await rotate(source.id, 3600);
    const failures: string[] = [];
    await Promise.all(source.keys.map(async (old, i) => {
      const fresh = rot.keys[i];
      const h = await hold(old.id, 100);
      const work = [
        (async () => {
          for (let j = 0; j < 5; j++) {
            try {
              const x = await hold(old.id, 10);
              await (j % 2 ? release(createHoldRepository(gw.db), x.businessKey) : settle(createHoldRepository(gw.db), x.businessKey, { requestId: `req_${randomUUID()}`, model: 'm', actualAmount: 5 }));
            } catch (err) {
              if (!(err instanceof QuotaExhaustedError)) throw err;
            }
          }
        })(),
        settle(createHoldRepository(gw.db), h.businessKey, { requestId: `req_${randomUUID()}`, model: 'm', actualAmount: 40 }),
        http(gw.baseUrl, 'DELETE', `/api/token/${fresh.id}`, { auth }).then((r) => {
          if (r.status !== 200) throw new Error(`delete: ${r.status} ${JSON.stringify(r.body)}`);
        }),
      ];
      for (const r of await Promise.allSettled(work)) if (r.status === 'rejected') failures.push(String(r.reason));
      // The budget went with the deleted replacement: refunds of holds it paid for are not credited to the
      // old key, whose own balance stays 0.
      expect(await balance(old.id)).toMatchObject({ remain: 0, held: 0 });
    }));
    expect(failures).toEqual([]);
    await cancel(rot.id);
  });

  it('after the grace period the old key is disabled and the replacement alone holds the budget', async () => {
    const source = await issue(2, { remain_quota: 1000 });
    const rot = await rotate(source.id, 0);
    expect(await waitForBatch(gw.baseUrl, auth, rot.id)).toMatchObject({ status: 'completed', created: 2, changed: 2 });
    await expect(hold(source.keys[0].id, 1)).rejects.toBeInstanceOf(InvalidApiKeyError);
    await hold(rot.keys[0].id, 1000);
    await expect(hold(rot.keys[0].id, 1)).rejects.toBeInstanceOf(QuotaExhaustedError);
    // Rotating the replacements again moves the budget on once more.
    const again = await rotate(rot.id, 3600);
    expect(again.keys[1].remain_quota).toBe(1000);
    await hold(rot.keys[1].id, 400);
    await expect(hold(again.keys[1].id, 601)).rejects.toBeInstanceOf(QuotaExhaustedError);
    await hold(again.keys[1].id, 600);
    await cancel(again.id);
  });

  it('an unlimited key rotates as before: the replacement is unlimited and both keys can spend', async () => {
    const source = await issue(1, { unlimited_quota: true, remain_quota: 0 });
    const old = source.keys[0];
    const rot = await rotate(source.id, 3600);
    const fresh = rot.keys[0];
    expect(fresh).toMatchObject({ unlimited_quota: true, remain_quota: 0, status: 1 });
    await hold(old.id, 1_000_000);
    await hold(fresh.id, 1_000_000);
    expect(await limitUsd(old.key)).toBe(100_000_000);
    expect(await limitUsd(fresh.key)).toBe(100_000_000);
    await cancel(rot.id);
  });
});
