// test modes: postgres, embedded
import { http } from '../helpers/harness';
import { holdsOf, ledgerOf, newKey, type RelayFixture, startRelayFixture, tokenRow } from '../helpers/relay-fixture';

/** 200 simultaneous calls on a key whose quota covers about 50: never overspent, used_quota == ledger sum. */
describe('relay: concurrent calls on one small quota', () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await startRelayFixture();
    fx.primary.setOptions({ latencyMs: 20 });
  });
  afterAll(async () => {
    await fx.close();
  });

  it('200 at once: exact accounting, remain never below zero, the rest 429 insufficient_quota', async () => {
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'concurrency test message' }], max_tokens: 20 };
    // Learn the hold of one call (same request every time), then give the key room for 50 of them.
    const probe = await newKey(fx.gw);
    const p = await http(fx.gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${probe.key}`, body });
    expect(p.status).toBe(200);
    const perCall = (await ledgerOf(fx.gw, probe.record.id))[0].quota;
    expect(perCall).toBeGreaterThan(0);

    const quota = 50 * perCall;
    const { key, record } = await newKey(fx.gw, { remain_quota: quota });
    const results = await Promise.all(
      Array.from({ length: 200 }, () => http(fx.gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${key}`, body })),
    );
    const statuses = results.map((r) => r.status);
    const ok = statuses.filter((s) => s === 200).length;
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    for (const r of results) if (r.status === 429) expect(r.body.error.code).toBe('insufficient_quota');
    expect(ok).toBeGreaterThan(0);

    const rows = await ledgerOf(fx.gw, record.id);
    const sum = rows.reduce((s, r) => s + r.quota, 0);
    const t = await tokenRow(fx.gw, record.id);
    expect(rows).toHaveLength(ok);
    expect(t.used_quota).toBe(sum);
    expect(sum).toBeLessThanOrEqual(quota);
    expect(t.remain_quota).toBeGreaterThanOrEqual(0);
    expect(t.remain_quota + t.used_quota).toBe(quota);
    expect(await holdsOf(fx.gw, record.id)).toBe(0);
    console.log(`[relay-concurrency] 200 calls, quota for 50 at ${perCall} credits: ${ok} served, ${200 - ok} refused, spent ${sum}/${quota}`);
  });
});
