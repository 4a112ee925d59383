// test modes: postgres, embedded
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { http, startGateway, TestGateway } from '../helpers/harness';
import { newKey, relayConfig } from '../helpers/relay-fixture';
import { waitFor } from '../helpers/wait';

// Per-key requests per minute, tokens per minute and requests in flight, counted in PostgreSQL: exact across two
// replicas (two gateways on one database, one upstream), refused requests never billed and never sent upstream.

describe('per-key rate limits across replicas', () => {
  let up: Simulator;
  let a: TestGateway;
  let b: TestGateway;
  // Both replicas read one clock: 10 s into a minute, moved on by the tests.
  let nowMs = (Math.floor(Date.now() / 60_000) + 1) * 60_000 + 10_000;
  const clock = () => nowMs;

  beforeAll(async () => {
    // Streams take about a second (10 chunks, 100 ms apart); plain answers come at once.
    up = await startSimulator({ apiKey: 'key-primary', chunkDelayMs: 100, streamChunks: 10, maxRecords: 5000 });
    const config = relayConfig(up.url, up.url, { groups: { vip: { multiplier: 0.5, rpm_limit: 2 } } });
    a = await startGateway({ config: ConfigStore.fixed(config), clock });
    // The embedded default is one process on one database: one gateway plays both replicas there.
    b = process.env.GATEWAY_TEST_DB_MODE === 'embedded' ? a : await startGateway({ config: ConfigStore.fixed(config), clock });
  });
  afterAll(async () => {
    await a.close();
    if (b !== a) await b.close();
    await up.close();
  });

  const chat = (gw: TestGateway, key: string, extra: Record<string, unknown> = {}) =>
    http(gw.baseUrl, 'POST', '/v1/chat/completions', {
      auth: `Bearer ${key}`,
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, ...extra },
    });
  const upstreamCallsOf = (key: string) => up.requests.filter((r) => r.path.endsWith('/chat/completions') && JSON.stringify(r.body).includes(key)).length;
  const ledgerRows = async (tokenId: number) => (await a.db.query('SELECT count(*)::int AS n FROM ledger WHERE token_id = $1', [tokenId])).rows[0].n as number;

  it('the key record takes the limits on create and full replace, reads them back, and refuses bad values naming the field', async () => {
    const { acct } = await newKey(a);
    const created = await http(a.baseUrl, 'POST', '/api/token/', { auth: acct.systemToken, body: { name: 'limited', rpm_limit: 60, tpm_limit: 40_000, max_concurrency: 3 } });
    expect(created.body.data).toMatchObject({ rpm_limit: 60, tpm_limit: 40_000, max_concurrency: 3 });
    const read = await http(b.baseUrl, 'GET', `/api/token/${created.body.data.id}`, { auth: acct.systemToken });
    expect(read.body.data).toMatchObject({ rpm_limit: 60, tpm_limit: 40_000, max_concurrency: 3 });
    const replaced = await http(a.baseUrl, 'PUT', '/api/token/', { auth: acct.systemToken, body: { id: created.body.data.id, name: 'limited', rpm_limit: 10 } });
    expect(replaced.body.data).toMatchObject({ rpm_limit: 10, tpm_limit: 0, max_concurrency: 0 });
    const bad = await http(a.baseUrl, 'POST', '/api/token/', { auth: acct.systemToken, body: { rpm_limit: -1 } });
    expect([bad.status, bad.body.message]).toEqual([400, 'rpm_limit: must not be negative']);
  });

  it('rpm_limit 60: of 200 requests over both replicas exactly 60 pass that minute; the rest are 429 with Retry-After, unbilled; the next minute admits again', async () => {
    const { key, record, acct } = await newKey(a);
    await a.deps.tokens.update(record.user_id, record.id, { name: 'rpm', remain_quota: 10_000_000, rpm_limit: 60 });
    const results: Array<{ status: number; headers: Headers; body: any }> = [];
    for (let wave = 0; wave < 20; wave++) {
      results.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => chat(i % 2 === 0 ? a : b, key, { user: `rpm-${record.id}` })))));
    }
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect([ok.length, limited.length]).toEqual([60, 140]);
    expect(limited[0].body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(limited[0].headers.get('retry-after')).toBe('50');
    expect(limited[0].headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(ok[0].headers.get('x-ratelimit-limit-requests')).toBe('60');
    expect(ok[0].headers.get('x-ratelimit-reset-requests')).toBe('50s');
    expect(ok.map((r) => Number(r.headers.get('x-ratelimit-remaining-requests'))).sort((x, y) => x - y)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(await ledgerRows(record.id)).toBe(60);
    expect(upstreamCallsOf(`rpm-${record.id}`)).toBe(60);
    const use = await http(b.baseUrl, 'GET', `/api/token/${record.id}/limits`, { auth: acct.systemToken });
    expect(use.body.data).toEqual({ rpm_limit: 60, tpm_limit: 0, max_concurrency: 0, minute_requests: 60, minute_tokens: 0, in_flight: 0, reset_seconds: 50, period_quota: 0, quota_period: null, period_used: 0, period_resets_at: null });
    // Counted in /metrics by key id and kind (each replica counts its own refusals), with no key material.
    let refusedCounted = 0;
    for (const gw of b === a ? [a] : [a, b]) {
      const text = await (await fetch(`${gw.baseUrl}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`gateway_rate_limited_total{key_id="${record.id}",kind="requests"}`));
      refusedCounted += Number(line?.split(' ').at(-1) ?? 0);
      expect(text).not.toContain(key.slice(3));
    }
    expect(refusedCounted).toBe(140);

    nowMs += 60_000;
    const next = await chat(b, key);
    expect([next.status, next.headers.get('x-ratelimit-remaining-requests')]).toEqual([200, '59']);
  });

  it('rpm permits a replica took in advance and left unused go back once idle, for the other replica to use', async () => {
    const { key, record, acct } = await newKey(a);
    await a.deps.tokens.update(record.user_id, record.id, { name: 'permits', remain_quota: 10_000_000, rpm_limit: 64 });
    expect((await chat(a, key)).status).toBe(200);
    // Replica a took a sixteenth of the minute (4) and used one; it counts only the one it used.
    const counted = await a.db.query('SELECT requests FROM key_rate_windows WHERE token_id = $1', [record.id]);
    expect(counted.rows[0].requests).toBe(4);
    const seen = await http(a.baseUrl, 'GET', `/api/token/${record.id}/limits`, { auth: acct.systemToken });
    expect(seen.body.data.minute_requests).toBe(1);
    // Idle for a second, replica a gives back the 3 permits it took and did not use.
    await waitFor(
      async () => (await a.db.query('SELECT requests FROM key_rate_windows WHERE token_id = $1', [record.id])).rows[0].requests === 1,
      { message: 'replica a to give back its unused permits' },
    );
    const statuses: number[] = [];
    for (let i = 0; i < 64; i++) statuses.push((await chat(b, key)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(63);
    expect(statuses.at(-1)).toBe(429);
  });

  it('a group default applies to keys without their own limit; a key\'s own value wins', async () => {
    const { key: grouped } = await newKey(a, { group: 'vip' });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await chat(i % 2 ? a : b, grouped)).status);
    expect(statuses).toEqual([200, 200, 429]);
    const { key: own, record } = await newKey(a, { group: 'vip' });
    await a.deps.tokens.update(record.user_id, record.id, { name: 'own', remain_quota: 10_000_000, group: 'vip', rpm_limit: 4 });
    const ownStatuses = [];
    for (let i = 0; i < 5; i++) ownStatuses.push((await chat(i % 2 ? a : b, own)).status);
    expect(ownStatuses).toEqual([200, 200, 200, 200, 429]);
  });

  it('max_concurrency 3: never more than 3 streams in flight over both replicas; a finished or aborted stream frees its slot at once', async () => {
    const { key, record, acct } = await newKey(a);
    await a.deps.tokens.update(record.user_id, record.id, { name: 'conc', remain_quota: 10_000_000, max_concurrency: 3 });
    const tag = `conc-${record.id}`;
    const stream = (gw: TestGateway, signal?: AbortSignal) =>
      fetch(`${gw.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        signal,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, user: tag, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
      });
    const first = await Promise.all(Array.from({ length: 8 }, (_, i) => stream(i % 2 ? a : b)));
    expect(first.filter((r) => r.status === 200)).toHaveLength(3);
    expect(first.filter((r) => r.status === 429)).toHaveLength(5);
    expect(upstreamCallsOf(tag)).toBe(3);
    const refused = await first.find((r) => r.status === 429)!.json();
    expect(refused.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    // The streams end (each about a second): their slots are free as they finish.
    // A slot is given back as its answer closes (one DELETE, not awaited by the request): wait for it to land,
    // however busy the database is, rather than for a fixed time.
    const slotsFree = async () => {
      for (let i = 0; i < 200; i++) {
        const use = await http(a.baseUrl, 'GET', `/api/token/${record.id}/limits`, { auth: acct.systemToken });
        if (use.body.data.in_flight === 0) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error('the slots were not given back');
    };
    await Promise.all(first.filter((r) => r.status === 200).map((r) => r.text()));
    await slotsFree();
    const second = await Promise.all(Array.from({ length: 3 }, (_, i) => stream(i % 2 ? a : b)));
    expect(second.map((r) => r.status)).toEqual([200, 200, 200]);
    // A client that goes away mid-stream frees its slot too.
    await Promise.all(second.map((r) => r.text()));
    await slotsFree();
    const aborter = new AbortController();
    const aborted = await stream(a, aborter.signal);
    expect(aborted.status).toBe(200);
    aborter.abort();
    await slotsFree();
    const third = await Promise.all(Array.from({ length: 3 }, (_, i) => stream(i % 2 ? a : b)));
    expect(third.map((r) => r.status)).toEqual([200, 200, 200]);
    await Promise.all(third.map((r) => r.text()));
    // Never billed, never sent upstream: only the admitted streams reached the simulator.
    expect(upstreamCallsOf(tag)).toBe(10);
    const ledger = await a.db.query('SELECT count(*)::int AS n FROM ledger WHERE token_id = $1', [record.id]);
    expect(ledger.rows[0].n).toBe(9);
  });

  it('a dead replica\'s slots lapse on their own', async () => {
    const { key, record } = await newKey(a);
    await a.deps.tokens.update(record.user_id, record.id, { name: 'lapse', remain_quota: 10_000_000, max_concurrency: 1 });
    // What a replica killed mid-request leaves behind: a slot nobody renews.
    await a.db.query(`INSERT INTO key_inflight (slot, token_id, expires_at) VALUES (gen_random_uuid(), $1, now() + interval '1 second')`, [record.id]);
    expect((await chat(a, key)).status).toBe(429);
    // Lapsed by the database's clock, the one admission compares expires_at with.
    await waitFor(
      async () => (await a.db.query('SELECT count(*)::int AS n FROM key_inflight WHERE token_id = $1 AND expires_at >= now()', [record.id])).rows[0].n === 0,
      { message: "the dead replica's slot to lapse" },
    );
    expect((await chat(b, key)).status).toBe(200);
  });

  it('tpm_limit: admits while the minute\'s billed tokens are under the limit, counting each call as it settles', async () => {
    nowMs += 60_000;
    const { key, record } = await newKey(a);
    await a.deps.tokens.update(record.user_id, record.id, { name: 'tpm', remain_quota: 10_000_000, tpm_limit: 40 });
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof chat>> | undefined;
    for (let i = 0; i < 20 && !statuses.includes(429); i++) {
      last = await chat(i % 2 ? a : b, key);
      statuses.push(last.status);
    }
    expect(statuses.at(-1)).toBe(429);
    expect(last!.headers.get('x-ratelimit-limit-tokens')).toBe('40');
    expect(last!.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
    const used = await a.db.query('SELECT sum(prompt_tokens + completion_tokens)::int AS t, count(*)::int AS n FROM ledger WHERE token_id = $1', [record.id]);
    // Every admitted call was billed; the calls before the last admitted one stayed under the limit.
    expect(used.rows[0].n).toBe(statuses.length - 1);
    expect(used.rows[0].t).toBeGreaterThanOrEqual(40);
    nowMs += 60_000;
    expect((await chat(a, key)).status).toBe(200);
  });

  it('period_quota: holds count against the day\'s budget, spend stops at it and resumes the next day; used_quota and the ledger stay exact', async () => {
    const { key, record, acct } = await newKey(a);
    const missing = await http(a.baseUrl, 'PUT', '/api/token/', { auth: acct.systemToken, body: { id: record.id, name: 'period', remain_quota: 10_000_000, period_quota: 20 } });
    expect([missing.status, missing.body.message]).toEqual([400, 'quota_period: is required when period_quota is set']);
    const set = await http(a.baseUrl, 'PUT', '/api/token/', {
      auth: acct.systemToken,
      body: { id: record.id, name: 'period', remain_quota: 10_000_000, period_quota: 20, quota_period: 'day' },
    });
    expect(set.body.data).toMatchObject({ period_quota: 20, quota_period: 'day' });
    const periodRow = async () =>
      (await a.db.query('SELECT period_used::int AS used, period_start::bigint AS start, used_quota::int AS used_quota, remain_quota::bigint AS remain FROM tokens WHERE id = $1', [record.id])).rows[0];
    const billed = async () => (await a.db.query('SELECT COALESCE(sum(quota), 0)::int AS q, count(*)::int AS n FROM ledger WHERE token_id = $1', [record.id])).rows[0];

    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof chat>> | undefined;
    for (let i = 0; i < 40 && !refused; i++) {
      const res = await chat(i % 2 ? a : b, key);
      statuses.push(res.status);
      if (res.status !== 200) refused = res;
    }
    expect(refused?.status).toBe(429);
    expect(refused?.body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect(refused?.body.error.message).toContain('period');
    const day1 = await billed();
    expect(day1.n).toBe(statuses.length - 1);
    expect(day1.q).toBeLessThanOrEqual(20);
    expect(day1.q).toBeGreaterThan(0);
    const row1 = await periodRow();
    // No hold is outstanding: the period counts exactly what was billed; the key's totals follow the ledger.
    expect(row1.used).toBe(day1.q);
    expect(row1.start).toBe(Math.floor(nowMs / 86_400_000) * 86_400);
    expect(row1.used_quota).toBe(day1.q);
    expect(Number(row1.remain)).toBe(10_000_000 - day1.q);
    const view = await http(b.baseUrl, 'GET', `/api/token/${record.id}/limits`, { auth: acct.systemToken });
    expect(view.body.data).toMatchObject({ period_quota: 20, quota_period: 'day', period_used: day1.q, period_resets_at: row1.start + 86_400 });

    // Concurrent calls at the edge never take more than the budget: a new day, twenty at once.
    nowMs += 86_400_000;
    const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(i % 2 ? a : b, key)));
    expect(burst.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    const day2 = await billed();
    const row2 = await periodRow();
    expect(row2.used).toBe(day2.q - day1.q);
    expect(row2.used).toBeLessThanOrEqual(20);
    expect(row2.used_quota).toBe(day2.q);
    const holds = await a.db.query('SELECT count(*)::int AS n FROM quota_holds WHERE token_id = $1', [record.id]);
    expect(holds.rows[0].n).toBe(0);
  });

  it('counts nothing for keys without limits, and token counting and model listing are not limited', async () => {
    const { key, record } = await newKey(a, { group: 'vip' });
    await a.deps.tokens.update(record.user_id, record.id, { name: 'models', remain_quota: 10_000_000, group: 'vip', rpm_limit: 1 });
    expect((await chat(a, key)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await http(b.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` })).status).toBe(200);
    const { key: free, record: freeRecord } = await newKey(a);
    expect((await chat(a, free)).headers.get('x-ratelimit-limit-requests')).toBeNull();
    const windows = await a.db.query('SELECT count(*)::int AS n FROM key_rate_windows WHERE token_id = $1', [freeRecord.id]);
    expect(windows.rows[0].n).toBe(0);
  });
});
