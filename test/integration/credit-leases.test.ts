import { Pool } from 'pg';
import { sweepExpiredHolds } from '../../src/domain/billing/sweeper';
import { ledgerOf, newKey, startRelayFixture, tokenRow, type RelayFixture } from '../helpers/relay-fixture';
import { createHoldRepository } from '../../src/db/repositories/holds';

/**
 * Credit leases (docs/decisions/0031-credit-leases.md): after a key's first call the process reserves its calls from one durable
 * lease hold, with no per-call hold row; the ledger stays exact; the lease goes back when idle, at the billing
 * barrier, at shutdown, and through the sweeper when its process died. `raw` reads the database directly, without
 * the harness's barrier, to see the leases as they are.
 */
describe('relay: credit leases', () => {
  let fx: RelayFixture;
  let raw: Pool;
  beforeAll(async () => {
    fx = await startRelayFixture({ leases: { idleMs: 60_000 } });
    raw = new Pool({ connectionString: fx.gw.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    await raw.end();
    await fx.close();
  });

  const ask = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'lease me' }], max_tokens: 16 };
  const billing = () => fx.gw.services.api.billing;

  async function holds(tokenId: number) {
    await billing().batcher.idle();
    const r = await raw.query<{ business_key: string; amount: string; reason: string }>(
      'SELECT business_key, amount, reason FROM quota_holds WHERE token_id = $1 ORDER BY id',
      [tokenId],
    );
    return r.rows.map((h) => ({ key: h.business_key, amount: Number(h.amount), reason: h.reason }));
  }

  async function rawBalances(tokenId: number) {
    await billing().batcher.idle();
    const t = await raw.query('SELECT remain_quota, used_quota FROM tokens WHERE id = $1', [tokenId]);
    const l = await raw.query('SELECT COALESCE(sum(quota), 0)::bigint AS billed, count(*)::int AS n FROM ledger WHERE token_id = $1', [tokenId]);
    return { remain: Number(t.rows[0].remain_quota), used: Number(t.rows[0].used_quota), billed: Number(l.rows[0].billed), rows: l.rows[0].n };
  }

  async function until(cond: () => Promise<boolean>, ms = 5_000) {
    const end = Date.now() + ms;
    while (!(await cond())) {
      if (Date.now() > end) throw new Error('condition not met in time');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('calls after the first reserve from one lease hold: no hold of their own, every call billed exactly once', async () => {
    const QUOTA = 5_000_000;
    const { client, record } = await newKey(fx.gw, { remain_quota: QUOTA });
    await client.chat.completions.create(ask);
    await until(async () => (await holds(record.id)).some((h) => h.reason === 'lease'));

    for (let i = 0; i < 10; i++) await client.chat.completions.create(ask);
    const during = await holds(record.id);
    expect(during).toHaveLength(1);
    expect(during[0].reason).toBe('lease');
    expect(during[0].key).toMatch(/^lease:/);

    // While the lease is out: what it still holds, plus what was spent, plus what is left is the quota.
    const b = await rawBalances(record.id);
    expect(b.rows).toBe(11);
    expect(b.used).toBe(b.billed);
    expect(b.remain + b.used + during[0].amount).toBe(QUOTA);

    // The barrier (every /api/* request, the harness's reads) gives the idle lease back.
    await billing().barrier();
    expect(await holds(record.id)).toEqual([]);
    const after = await tokenRow(fx.gw, record.id);
    expect(after.remain_quota + after.used_quota).toBe(QUOTA);
    expect((await ledgerOf(fx.gw, record.id)).reduce((s, r) => s + r.quota, 0)).toBe(after.used_quota);
  });

  it('a key with quota for a few calls is never overspent: the lease is refused and calls hold one by one', async () => {
    const probe = await newKey(fx.gw, { remain_quota: 1_000_000 });
    await probe.client.chat.completions.create(ask);
    const price = (await ledgerOf(fx.gw, probe.record.id))[0].quota;

    const small = await newKey(fx.gw, { remain_quota: 5 * price });
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await fetch(`${fx.gw.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${small.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(ask),
      });
      statuses.push(r.status);
      await r.text();
    }
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    const t = await tokenRow(fx.gw, small.record.id);
    const rows = await ledgerOf(fx.gw, small.record.id);
    expect(t.remain_quota).toBeGreaterThanOrEqual(0);
    expect(t.used_quota).toBe(rows.reduce((s, r) => s + r.quota, 0));
    expect(t.used_quota).toBeLessThanOrEqual(5 * price);
    expect(t.remain_quota + t.used_quota).toBe(5 * price);
    expect(rows).toHaveLength(statuses.filter((s) => s === 200).length);
  });

  it("a dead process's lease comes back through the sweeper; a call on a swept lease is still billed exactly", async () => {
    const QUOTA = 5_000_000;
    const { client, record } = await newKey(fx.gw, { remain_quota: QUOTA });
    await client.chat.completions.create(ask);
    await until(async () => (await holds(record.id)).some((h) => h.reason === 'lease'));

    // As if the process died: its lease expires and the sweeper returns what it held.
    await raw.query("UPDATE quota_holds SET expires_at = now() - interval '1 second' WHERE token_id = $1", [record.id]);
    expect(await sweepExpiredHolds(createHoldRepository(raw))).toBeGreaterThanOrEqual(1);
    expect(await holds(record.id)).toEqual([]);
    let b = await rawBalances(record.id);
    expect(b.remain + b.used).toBe(QUOTA);

    // This process still believes in the lease: the call draws from it, its settle finds it gone and charges
    // the key's budget directly; nothing is lost or billed twice.
    await client.chat.completions.create(ask);
    b = await rawBalances(record.id);
    expect(b.rows).toBe(2);
    expect(b.used).toBe(b.billed);
    const left = (await holds(record.id)).reduce((s, h) => s + h.amount, 0);
    expect(b.remain + b.used + left).toBe(QUOTA);

    await billing().barrier();
    const t = await tokenRow(fx.gw, record.id);
    expect(t.remain_quota + t.used_quota).toBe(QUOTA);
  });

  it('shutting a gateway down settles its queued calls and gives its leases back', async () => {
    const other = await startRelayFixture({ leases: { idleMs: 60_000 } });
    const { client, record } = await newKey(other.gw, { remain_quota: 5_000_000 });
    for (let i = 0; i < 5; i++) await client.chat.completions.create(ask);
    await until(async () => (await holds(record.id)).some((h) => h.reason === 'lease'));
    await other.close();
    expect(await holds(record.id)).toEqual([]);
    const b = await rawBalances(record.id);
    expect(b.rows).toBe(5);
    expect(b.used).toBe(b.billed);
    expect(b.remain + b.used).toBe(5_000_000);
  });
});
