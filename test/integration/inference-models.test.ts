import { randomUUID } from 'node:crypto';
import { reserve, settle } from '../../src/domain/billing/holds';
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';

/**
 * API-key authentication on inference routes, GET /v1/models (+ retrieve) with group and allowlist
 * visibility, and the OpenAI-compatible balance endpoints, over real HTTP on the real database.
 */
describe('inference: API keys, /v1/models and balance', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  const now = () => Math.floor(Date.now() / 1000);
  const uniq = () => randomUUID().slice(0, 8);

  /** A channel with its own group, so tests sharing the database never see each other's models. */
  async function addChannel(models: string[], groups: string[], opts: { ownedBy?: string; status?: number } = {}) {
    const res = await gw.db.query<{ id: number; created: number }>(
      `INSERT INTO channels (name, type, base_url, models, groups, owned_by, status)
       VALUES ($1, 'openai', 'https://upstream.invalid', $2, $3, $4, $5)
       RETURNING id, extract(epoch FROM created_at)::bigint AS created`,
      [`test-${uniq()}`, models, groups, opts.ownedBy ?? 'test-provider', opts.status ?? 1],
    );
    await gw.deps.catalog.refresh();
    return res.rows[0];
  }

  async function newKey(settings: Record<string, unknown> = {}) {
    const acct = await newAccount(gw.db);
    const record = await gw.deps.tokens.create(acct.id, { remain_quota: 1000, ...settings });
    return { acct, record, key: `sk-${record.key}` };
  }

  const invalidKeyBody = { error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'invalid_api_key' } };

  describe('authentication', () => {
    it('accepts Bearer, bearer, the raw key, the key without sk- and x-api-key', async () => {
      const { key } = await newKey();
      const forms: Array<Record<string, string>> = [
        { authorization: `Bearer ${key}` },
        { authorization: `bearer ${key}` },
        { authorization: key },
        { authorization: `Bearer ${key.slice(3)}` },
        { 'x-api-key': key },
      ];
      for (const headers of forms) {
        const res = await http(gw.baseUrl, 'GET', '/v1/models', { headers });
        expect(res.status).toBe(200);
        expect(res.body.object).toBe('list');
        expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
      }
    });

    it('rejects a missing, malformed, unknown key and a system token with 401 invalid_api_key', async () => {
      const acct = await newAccount(gw.db);
      const cases: Array<string | undefined> = [
        undefined,
        'Bearer ',
        'Bearer sk-short',
        `Bearer sk-${'A'.repeat(48)}`,
        acct.systemToken,
        `Bearer ${acct.systemToken}`,
      ];
      for (const auth of cases) {
        const res = await http(gw.baseUrl, 'GET', '/v1/models', { auth });
        expect(res.status).toBe(401);
        expect(res.body).toEqual(invalidKeyBody);
        expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
      }
    });

    it('rejects disabled, expired and deleted keys; re-enabling works at once', async () => {
      const { acct, record, key } = await newKey();
      expect((await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` })).status).toBe(200);

      await gw.deps.tokens.setStatus(acct.id, record.id, 2);
      const disabled = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` });
      expect(disabled.status).toBe(401);
      expect(disabled.body).toEqual(invalidKeyBody);

      await gw.deps.tokens.setStatus(acct.id, record.id, 1);
      expect((await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` })).status).toBe(200);

      await gw.deps.tokens.remove(acct.id, record.id);
      const deleted = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` });
      expect(deleted.status).toBe(401);
      expect(deleted.body).toEqual(invalidKeyBody);

      // Expiry is checked on every request, also for a cached key.
      const soon = await newKey({ expired_time: now() + 2 });
      expect((await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${soon.key}` })).status).toBe(200);
      await gw.db.query('UPDATE tokens SET expired_time = $2 WHERE id = $1', [soon.record.id, now() - 1]);
      gw.deps.keyAuth.invalidate(soon.record.id);
      const expired = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${soon.key}` });
      expect(expired.status).toBe(401);
      expect(expired.body).toEqual(invalidKeyBody);
    });

    it('writes one log line per request, without the key', async () => {
      const { key } = await newKey();
      const before = gw.logs.lines.length;
      const res = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` });
      const lines = gw.logs.lines.slice(before).join('');
      expect(lines).toContain(res.headers.get('x-request-id'));
      expect(lines).not.toContain(key.slice(3));
      expect(gw.logs.text()).not.toContain(key.slice(3));
    });
  });

  describe('GET /v1/models', () => {
    it('lists the models of enabled channels in the key group, sorted and unique, in the OpenAI shape', async () => {
      const group = `g_${uniq()}`;
      const c1 = await addChannel(['m-zeta', 'm-alpha'], [group], { ownedBy: 'prov-1' });
      const c2 = await addChannel(['m-alpha', 'm-beta'], [group, `other_${uniq()}`], { ownedBy: 'prov-2' });
      await addChannel(['m-hidden'], [`other_${uniq()}`]);
      await addChannel(['m-disabled'], [group], { status: 2 });
      const { key } = await newKey({ group });
      const res = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        object: 'list',
        data: [
          { id: 'm-alpha', object: 'model', created: Math.min(c1.created, c2.created), owned_by: 'prov-1' },
          { id: 'm-beta', object: 'model', created: c2.created, owned_by: 'prov-2' },
          { id: 'm-zeta', object: 'model', created: c1.created, owned_by: 'prov-1' },
        ],
      });
      for (const m of res.body.data) expect(Number.isInteger(m.created)).toBe(true);
    });

    it('narrows by the key allowlist and answers an empty catalog with an empty list', async () => {
      const group = `g_${uniq()}`;
      await addChannel(['a-1', 'a-2', 'a-3'], [group]);
      const limited = await newKey({ group, models: 'a-3, a-1,not-in-catalog' });
      const res = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${limited.key}` });
      expect(res.body.data.map((m: { id: string }) => m.id)).toEqual(['a-1', 'a-3']);

      const nothing = await newKey({ group: `empty_${uniq()}` });
      const empty = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${nothing.key}` });
      expect(empty.status).toBe(200);
      expect(empty.body).toEqual({ object: 'list', data: [] });
    });

    it("reads group '' as 'default'", async () => {
      const res = await gw.db.query<{ m: string }>(
        `SELECT DISTINCT unnest(models) AS m FROM channels WHERE status = 1 AND 'default' = ANY(groups) ORDER BY 1`,
      );
      await gw.deps.catalog.refresh();
      const blank = await newKey({ group: '' });
      const named = await newKey({ group: 'default' });
      const a = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${blank.key}` });
      const b = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${named.key}` });
      expect(a.body).toEqual(b.body);
      const ids: string[] = a.body.data.map((m: { id: string }) => m.id);
      // Other test files may add default-group channels concurrently: everything seen before must be there.
      for (const row of res.rows) expect(ids).toContain(row.m);
    });

    it('follows channel changes at once after a refresh, and within the 5 s TTL without one', async () => {
      const group = `g_${uniq()}`;
      const ch = await addChannel(['t-1'], [group]);
      const { key } = await newKey({ group });
      expect((await http(gw.baseUrl, 'GET', '/v1/models', { auth: key })).body.data).toHaveLength(1);
      await gw.db.query('UPDATE channels SET status = 2 WHERE id = $1', [ch.id]);
      await gw.deps.catalog.refresh();
      expect((await http(gw.baseUrl, 'GET', '/v1/models', { auth: key })).body.data).toEqual([]);

      // Another replica's change: nobody calls refresh here.
      await gw.db.query(`UPDATE channels SET status = 1, models = '{t-2}' WHERE id = $1`, [ch.id]);
      const changedAt = Date.now();
      let ids: string[] = [];
      while (Date.now() - changedAt < 7000) {
        ids = (await http(gw.baseUrl, 'GET', '/v1/models', { auth: key })).body.data.map((m: { id: string }) => m.id);
        if (ids.length > 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(ids).toEqual(['t-2']);
      expect(Date.now() - changedAt).toBeLessThan(5500);
    });

    it('retrieves one visible model; an invisible or unknown one is 404 model_not_found', async () => {
      const group = `g_${uniq()}`;
      const ch = await addChannel(['r-1', 'r-2'], [group], { ownedBy: 'prov-r' });
      const { key } = await newKey({ group, models: 'r-1' });
      const ok = await http(gw.baseUrl, 'GET', '/v1/models/r-1', { auth: `Bearer ${key}` });
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ id: 'r-1', object: 'model', created: ch.created, owned_by: 'prov-r' });
      for (const model of ['r-2', 'nope']) {
        const res = await http(gw.baseUrl, 'GET', `/v1/models/${model}`, { auth: `Bearer ${key}` });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({
          error: { message: expect.stringContaining(model), type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
        });
        expect(res.headers.get('x-request-id')).toBeTruthy();
      }
      const noKey = await http(gw.baseUrl, 'GET', '/v1/models/r-1');
      expect(noKey.status).toBe(401);
    });

    it('retrieves ids containing a slash', async () => {
      const group = `g_${uniq()}`;
      await addChannel(['org/model-x'], [group]);
      const { key } = await newKey({ group });
      for (const path of ['/v1/models/org/model-x', '/v1/models/org%2Fmodel-x']) {
        const res = await http(gw.baseUrl, 'GET', path, { auth: key });
        expect(res.status).toBe(200);
        expect(res.body.id).toBe('org/model-x');
      }
    });
  });

  describe('balance (dashboard/billing)', () => {
    it('reports the key limit and usage in USD as one-api does, fresh from the database', async () => {
      const expires = now() + 86_400;
      const { record, key } = await newKey({ remain_quota: 1_250_000, expired_time: expires });
      await gw.db.query('UPDATE tokens SET remain_quota = 1000000, used_quota = 250000 WHERE id = $1', [record.id]);
      for (const prefix of ['/v1', '']) {
        const sub = await http(gw.baseUrl, 'GET', `${prefix}/dashboard/billing/subscription`, { auth: `Bearer ${key}` });
        expect(sub.status).toBe(200);
        expect(sub.body).toEqual({
          object: 'billing_subscription',
          has_payment_method: true,
          soft_limit_usd: 2.5,
          hard_limit_usd: 2.5,
          system_hard_limit_usd: 2.5,
          access_until: expires,
        });
        const usage = await http(gw.baseUrl, 'GET', `${prefix}/dashboard/billing/usage`, { auth: `Bearer ${key}` });
        expect(usage.status).toBe(200);
        // 250,000 credits = 0.50 USD = 50 cents.
        expect(usage.body).toEqual({ object: 'list', total_usage: 50 });
      }

      // An open hold moves credits out of remain_quota but not out of the key's limit; settling 100,000 of
      // the 400,000 held bills 0.20 USD.
      const held = await reserve(gw.db, {
        businessKey: `test:${uniq()}`, accountId: record.user_id, tokenId: record.id, amount: 400_000, reason: 'test', ttlSeconds: 60,
      });
      const during = await http(gw.baseUrl, 'GET', '/v1/dashboard/billing/subscription', { auth: key });
      expect(during.body.hard_limit_usd).toBe(2.5);
      await settle(gw.db, held.businessKey, { requestId: `req_${uniq()}${uniq()}`, model: 'gpt-4o', actualAmount: 100_000 });
      const after = await http(gw.baseUrl, 'GET', '/v1/dashboard/billing/subscription', { auth: key });
      expect(after.body.hard_limit_usd).toBe(2.5);
      const used = await http(gw.baseUrl, 'GET', '/v1/dashboard/billing/usage', { auth: key });
      expect(used.body.total_usage).toBe(70);
    });

    it('reports 100000000 USD for an unlimited key and access_until 0 when it never expires', async () => {
      const { key } = await newKey({ unlimited_quota: true, remain_quota: 0 });
      const sub = await http(gw.baseUrl, 'GET', '/v1/dashboard/billing/subscription', { auth: key });
      expect(sub.body).toMatchObject({ hard_limit_usd: 100_000_000, soft_limit_usd: 100_000_000, access_until: 0 });
      const usage = await http(gw.baseUrl, 'GET', '/dashboard/billing/usage', { auth: key });
      expect(usage.body).toEqual({ object: 'list', total_usage: 0 });
    });

    it('needs a valid API key', async () => {
      const acct = await newAccount(gw.db);
      for (const auth of [undefined, acct.systemToken]) {
        const res = await http(gw.baseUrl, 'GET', '/v1/dashboard/billing/subscription', { auth });
        expect(res.status).toBe(401);
        expect(res.body).toEqual(invalidKeyBody);
      }
    });
  });
});
