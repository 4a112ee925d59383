// test modes: postgres, embedded
import { insertKeys } from '../../src/domain/keys/tokens';
import { TOKEN_DEFAULTS } from '../../src/domain/keys/token-record';
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';
import { createRepositories } from '../../src/db/repositories';

/**
 * The key lifecycle of `/api/token/*` over real HTTP: create, read, list, whole-object update,
 * status-only changes, delete; ownership; audit trail; and that key material never reaches the logs.
 */
describe('management: API keys', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  type Account = Awaited<ReturnType<typeof newAccount>>;

  /** Every management response carries x-request-id; each call checks it. */
  async function call(acct: Account | string, method: string, path: string, body?: unknown) {
    const auth = typeof acct === 'string' ? acct : acct.systemToken;
    const res = await http(gw.baseUrl, method, path, { auth, body });
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    return res;
  }

  async function createKey(acct: Account, body: Record<string, unknown> = {}) {
    const res = await call(acct, 'POST', '/api/token/', body);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    return res.body.data as Record<string, any>;
  }

  async function auditRow(requestId: string | null) {
    const res = await gw.db.query('SELECT * FROM audit_events WHERE request_id = $1', [requestId]);
    expect(res.rows).toHaveLength(1);
    return res.rows[0];
  }

  const now = () => Math.floor(Date.now() / 1000);

  it('creates a key and returns the whole record with id and the 48-char key without sk-', async () => {
    const acct = await newAccount(gw.db);
    const expires = now() + 3600;
    const res = await call(acct, 'POST', '/api/token/', {
      name: 'ci', remain_quota: 500_000, unlimited_quota: false, group: 'default', models: 'gpt-4o,gpt-4o-mini',
      expired_time: expires,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: '', data: expect.any(Object) });
    const key = res.body.data;
    expect(key).toMatchObject({
      id: expect.any(Number), user_id: acct.id, status: 1, name: 'ci', remain_quota: 500_000, unlimited_quota: false,
      group: 'default', models: 'gpt-4o,gpt-4o-mini', used_quota: 0, expired_time: expires,
    });
    expect(key.key).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(key.key.startsWith('sk-')).toBe(false);
    expect(Math.abs(key.created_time - now())).toBeLessThan(60);

    const read = await call(acct, 'GET', `/api/token/${key.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ success: true, message: '', data: key });
  });

  it('gives a key with neither remain_quota nor unlimited_quota zero quota, enabled, never expiring', async () => {
    const acct = await newAccount(gw.db);
    const key = await createKey(acct, {});
    expect(key).toMatchObject({
      status: 1, name: '', remain_quota: 0, unlimited_quota: false, group: '', models: '', expired_time: -1,
    });
  });

  it('accepts and ignores model_limits, model_limits_enabled, allow_ips and count; count never batches', async () => {
    const acct = await newAccount(gw.db);
    const res = await call(acct, 'POST', '/api/token/', {
      name: 'ignored', remain_quota: 1, model_limits: 'gpt-4o', model_limits_enabled: true, allow_ips: '10.0.0.1',
      count: 25,
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'ignored', model_limits: '', model_limits_enabled: false, allow_ips: '' });
    const read = await call(acct, 'GET', `/api/token/${res.body.data.id}`);
    expect(read.body.data).toMatchObject({ model_limits: '', model_limits_enabled: false, allow_ips: '' });
    const list = await call(acct, 'GET', '/api/token/');
    expect(list.headers.get('x-total-count')).toBe('1');
    expect(list.body.data).toHaveLength(1);
    // Other shapes of the ignored fields are accepted too.
    const other = await call(acct, 'POST', '/api/token/', { model_limits: ['a', 'b'], model_limits_enabled: 'yes', allow_ips: null, count: 'ten' });
    expect(other.status).toBe(200);
  });

  it('validates a status given on create but ignores it: keys are created enabled', async () => {
    const acct = await newAccount(gw.db);
    const key = await createKey(acct, { name: 'wants-disabled', status: 2 });
    expect(key.status).toBe(1);
  });

  it('lists only the account keys, newest first, paged, with X-Total-Count', async () => {
    const acct = await newAccount(gw.db);
    const ids: number[] = [];
    for (const name of ['k1', 'k2', 'k3']) ids.push((await createKey(acct, { name })).id);

    const all = await call(acct, 'GET', '/api/token/');
    expect(all.status).toBe(200);
    expect(all.headers.get('x-total-count')).toBe('3');
    expect(all.body.success).toBe(true);
    expect(all.body.data.map((k: any) => k.id)).toEqual([...ids].reverse());
    expect(all.body.data.every((k: any) => /^[A-Za-z0-9]{48}$/.test(k.key))).toBe(true);

    const p1 = await call(acct, 'GET', '/api/token/?p=1&page_size=2');
    expect(p1.body.data.map((k: any) => k.id)).toEqual([ids[2], ids[1]]);
    expect(p1.headers.get('x-total-count')).toBe('3');
    const p2 = await call(acct, 'GET', '/api/token/?p=2&page_size=2');
    expect(p2.body.data.map((k: any) => k.id)).toEqual([ids[0]]);
    const p0 = await call(acct, 'GET', '/api/token/?p=0&page_size=2');
    expect(p0.body.data).toEqual(p1.body.data);
    const past = await call(acct, 'GET', '/api/token/?p=9&page_size=2');
    expect(past.status).toBe(200);
    expect(past.body.data).toEqual([]);
    expect(past.headers.get('x-total-count')).toBe('3');
    // Without the trailing slash it is the same resource.
    const noSlash = await call(acct, 'GET', '/api/token?p=1&page_size=100');
    expect(noSlash.status).toBe(200);
    expect(noSlash.body.data).toEqual(all.body.data);
  });

  it('walks every key with the after_id cursor, newest first, filters included, without repeats or gaps', async () => {
    const acct = await newAccount(gw.db);
    const ids: number[] = [];
    for (let i = 0; i < 25; i++) ids.push((await createKey(acct, { name: i % 2 ? `odd-${i}` : `even-${i}` })).id);
    const walk = async (query: string) => {
      const seen: number[] = [];
      let after: number | undefined;
      for (;;) {
        const res = await call(acct, 'GET', `/api/token/?page_size=10${query}${after ? `&after_id=${after}` : ''}`);
        expect(res.status).toBe(200);
        if (res.body.data.length === 0) return { seen, total: res.headers.get('x-total-count') };
        seen.push(...res.body.data.map((k: any) => k.id));
        after = seen.at(-1);
      }
    };
    const all = await walk('');
    expect(all).toEqual({ seen: [...ids].reverse(), total: '25' });
    const odd = await walk('&keyword=odd');
    expect(odd).toEqual({ seen: ids.filter((_, i) => i % 2).reverse(), total: '12' });
    // p is ignored with a cursor; a bad cursor is a 400 naming it.
    const withP = await call(acct, 'GET', `/api/token/?page_size=5&p=3&after_id=${ids[20]}`);
    expect(withP.body.data.map((k: any) => k.id)).toEqual(ids.slice(15, 20).reverse());
    const bad = await call(acct, 'GET', '/api/token/?after_id=x');
    expect([bad.status, bad.body.message]).toEqual([400, 'after_id: must be a key id']);
  });

  it('X-Total-Count stays exact through creates, status and group changes, deletes and batch issuance, without counting rows', async () => {
    const acct = await newAccount(gw.db);
    const ids: number[] = [];
    for (let i = 0; i < 6; i++) ids.push((await createKey(acct, { name: `c${i}`, group: i < 2 ? 'vip' : '' })).id);
    await call(acct, 'PUT', '/api/token/?status_only=true', { id: ids[0], status: 2 });
    await call(acct, 'PUT', '/api/token/?status_only=true', { id: ids[3], status: 2 });
    await call(acct, 'PUT', '/api/token/', { id: ids[4], name: 'c4', group: 'vip' });
    await call(acct, 'DELETE', `/api/token/${ids[5]}`);
    // What one chunk of a batch issuance writes: one multi-row insert.
    await insertKeys(createRepositories(gw.db).keys, gw.deps.cipher, Array.from({ length: 7 }, (_, i) => ({ ...TOKEN_DEFAULTS, userId: acct.id, name: `counted-${i}` })));
    const total = async (q: string) => Number((await call(acct, 'GET', `/api/token/?page_size=1${q}`)).headers.get('x-total-count'));
    const actual = async (where: string) => (await gw.db.query(`SELECT count(*)::int AS n FROM tokens WHERE user_id = $1 ${where}`, [acct.id])).rows[0].n;
    expect(await total('')).toBe(await actual(''));
    expect(await total('')).toBe(12);
    expect(await total('&status=2')).toBe(await actual('AND status = 2'));
    expect(await total('&status=1')).toBe(await actual('AND status = 1'));
    expect(await total('&group=vip')).toBe(await actual(`AND "group" = 'vip'`));
    expect(await total('&group=default&status=1')).toBe(await actual(`AND "group" = '' AND status = 1`));
    expect(await total('&keyword=counted')).toBe(7);
    // A name search reads its page and total in one walk; past the last match the total is still the filter's.
    expect(await total('&keyword=counted&p=3')).toBe(7);
    expect(await total('&keyword=counted&p=99')).toBe(7);
    expect((await call(acct, 'GET', '/api/token/?page_size=1&keyword=counted&p=99')).body.data).toEqual([]);
    expect(await total('&keyword=counted&status=2')).toBe(0);
  });

  it('uses page_size 10 by default', async () => {
    const acct = await newAccount(gw.db);
    for (let i = 0; i < 11; i++) await createKey(acct, { name: `k${i}` });
    const page = await call(acct, 'GET', '/api/token/');
    expect(page.body.data).toHaveLength(10);
    expect(page.headers.get('x-total-count')).toBe('11');
    const second = await call(acct, 'GET', '/api/token/?p=2');
    expect(second.body.data).toHaveLength(1);
  });

  describe('PUT /api/token/ (whole object)', () => {
    it('replaces the writable fields; omitted ones go back to creation defaults; status is untouched', async () => {
      const acct = await newAccount(gw.db);
      const created = await createKey(acct, {
        name: 'before', remain_quota: 1000, unlimited_quota: true, group: 'vip', models: 'gpt-4o', expired_time: now() + 3600,
      });
      const res = await call(acct, 'PUT', '/api/token/', { id: created.id, name: 'after', status: 2 });
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(res.body.data).toEqual({
        ...created, name: 'after', remain_quota: 0, unlimited_quota: false, group: '', models: '', expired_time: -1,
      });
      expect(res.body.data.status).toBe(1);
      const read = await call(acct, 'GET', `/api/token/${created.id}`);
      expect(read.body.data).toEqual(res.body.data);
    });

    it('round-trips the object as read, and ignores read-only fields', async () => {
      const acct = await newAccount(gw.db);
      const created = await createKey(acct, { name: 'rt', remain_quota: 42, group: 'g', models: 'm1,m2' });
      const same = await call(acct, 'PUT', '/api/token/', created);
      expect(same.status).toBe(200);
      expect(same.body.data).toEqual(created);

      const res = await call(acct, 'PUT', '/api/token/', {
        ...created, remain_quota: 43, key: 'A'.repeat(48), user_id: acct.id + 1000, used_quota: 999, created_time: 1,
        accessed_time: 2, batch_id: 77,
      });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ ...created, remain_quota: 43 });
    });

    it('writes an audit event', async () => {
      const acct = await newAccount(gw.db);
      const created = await createKey(acct, { name: 'a' });
      const res = await call(acct, 'PUT', '/api/token/', { id: created.id, name: 'b' });
      const row = await auditRow(res.headers.get('x-request-id'));
      expect(row).toMatchObject({ account_id: acct.id, action: 'token.update', target_type: 'token', target_id: String(created.id) });
    });
  });

  describe('PUT /api/token/?status_only=true', () => {
    it('changes only the status; the rest of the body is ignored', async () => {
      const acct = await newAccount(gw.db);
      const created = await createKey(acct, { name: 'st', remain_quota: 5 });
      const off = await call(acct, 'PUT', '/api/token/?status_only=true', {
        ...created, status: 2, name: 'ignored', remain_quota: 'not even valid', unlimited_quota: 'nope',
      });
      expect(off.status).toBe(200);
      expect(off.body).toEqual({ success: true, message: '', data: { ...created, status: 2 } });
      const read = await call(acct, 'GET', `/api/token/${created.id}`);
      expect(read.body.data).toEqual({ ...created, status: 2 });

      const on = await call(acct, 'PUT', '/api/token/?status_only=true', { id: created.id, status: 1 });
      expect(on.status).toBe(200);
      expect(on.body.data).toEqual(created);
    });

    it('makes a disabled key fail on the very next request, and an enabled one work again', async () => {
      const acct = await newAccount(gw.db);
      const created = await createKey(acct, { name: 'live', unlimited_quota: true });
      const apiKey = `sk-${created.key}`;
      // The first authentication puts the key in this replica's cache; disabling must not wait for its TTL.
      const principal = await gw.deps.keyAuth.authenticate(apiKey);
      expect(principal).toMatchObject({ tokenId: created.id, accountId: acct.id });
      const models = () => http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${apiKey}` });
      expect((await models()).status).toBe(200);

      const off = await call(acct, 'PUT', '/api/token/?status_only=true', { ...created, status: 2 });
      expect(off.status).toBe(200);
      await expect(gw.deps.keyAuth.authenticate(apiKey)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
      await expect(gw.deps.keyAuth.authenticate(created.key)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
      const modelsOff = await models();
      expect(modelsOff.status).toBe(401);
      expect(modelsOff.body.error.code).toBe('invalid_api_key');

      const on = await call(acct, 'PUT', '/api/token/?status_only=true', { ...created, status: 1 });
      expect(on.status).toBe(200);
      await expect(gw.deps.keyAuth.authenticate(apiKey)).resolves.toMatchObject({ tokenId: created.id });
      expect((await models()).status).toBe(200);
    });

    it('records token.disable and token.enable audit events', async () => {
      const acct = await newAccount(gw.db);
      const created = await createKey(acct);
      const off = await call(acct, 'PUT', '/api/token/?status_only=true', { id: created.id, status: 2 });
      expect(await auditRow(off.headers.get('x-request-id'))).toMatchObject({
        account_id: acct.id, action: 'token.disable', target_id: String(created.id),
      });
      const on = await call(acct, 'PUT', '/api/token/?status_only=true', { id: created.id, status: 1 });
      expect(await auditRow(on.headers.get('x-request-id'))).toMatchObject({
        account_id: acct.id, action: 'token.enable', target_id: String(created.id),
      });
    });
  });

  describe('DELETE /api/token/{id}', () => {
    it('removes the key irreversibly: reads 404, no longer authenticates', async () => {
      const acct = await newAccount(gw.db);
      const created = await createKey(acct, { name: 'doomed', unlimited_quota: true });
      expect((await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer sk-${created.key}` })).status).toBe(200);

      const del = await call(acct, 'DELETE', `/api/token/${created.id}`);
      expect(del.status).toBe(200);
      expect(del.body.success).toBe(true);

      const read = await call(acct, 'GET', `/api/token/${created.id}`);
      expect(read.status).toBe(404);
      expect(read.body).toEqual({ success: false, message: expect.any(String) });
      await expect(gw.deps.keyAuth.authenticate(`sk-${created.key}`)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
      const models = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer sk-${created.key}` });
      expect(models.status).toBe(401);
      expect(models.body.error.code).toBe('invalid_api_key');

      const again = await call(acct, 'DELETE', `/api/token/${created.id}`);
      expect(again.status).toBe(404);
      const put = await call(acct, 'PUT', '/api/token/', { id: created.id, name: 'zombie' });
      expect(put.status).toBe(404);
      const list = await call(acct, 'GET', '/api/token/');
      expect(list.body.data).toEqual([]);
      expect(list.headers.get('x-total-count')).toBe('0');
    });
  });

  describe('ownership', () => {
    it("answers another account's key exactly like a missing one, and never lists it", async () => {
      const a = await newAccount(gw.db);
      const b = await newAccount(gw.db);
      const aKey = await createKey(a, { name: 'a-key', remain_quota: 7 });
      const bKey = await createKey(b, { name: 'b-key' });

      const missing = await call(b, 'GET', '/api/token/999999999');
      const attempts = [
        await call(b, 'GET', `/api/token/${aKey.id}`),
        await call(b, 'PUT', '/api/token/', { ...aKey, name: 'stolen' }),
        await call(b, 'PUT', '/api/token/?status_only=true', { id: aKey.id, status: 2 }),
        await call(b, 'DELETE', `/api/token/${aKey.id}`),
      ];
      for (const res of attempts) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ success: false, message: expect.any(String) });
        expect(res.body.message).not.toContain(aKey.key);
      }
      expect(missing.status).toBe(404);
      expect(attempts[0].body.message.replace(String(aKey.id), 'N')).toBe(missing.body.message.replace('999999999', 'N'));

      const aRead = await call(a, 'GET', `/api/token/${aKey.id}`);
      expect(aRead.body.data).toEqual(aKey);
      await expect(gw.deps.keyAuth.authenticate(`sk-${aKey.key}`)).resolves.toMatchObject({ tokenId: aKey.id });

      const aList = await call(a, 'GET', '/api/token/?page_size=100');
      expect(aList.body.data.map((k: any) => k.id)).toEqual([aKey.id]);
      const bList = await call(b, 'GET', '/api/token/?page_size=100');
      expect(bList.body.data.map((k: any) => k.id)).toEqual([bKey.id]);

      // B's failed attempts wrote nothing to A's trail.
      const aAudit = await gw.db.query('SELECT action FROM audit_events WHERE account_id = $1 ORDER BY id', [a.id]);
      expect(aAudit.rows.map((r) => r.action)).toEqual(['account.create', 'token.create']);
    });
  });

  describe('audit and secrecy', () => {
    it('audits every write with account, action, target, request id and time, without key material', async () => {
      const acct = await newAccount(gw.db);
      const t0 = now();
      const create = await call(acct, 'POST', '/api/token/', { name: 'audited', remain_quota: 10 });
      const key = create.body.data;
      const update = await call(acct, 'PUT', '/api/token/', { ...key, name: 'audited-2' });
      const disable = await call(acct, 'PUT', '/api/token/?status_only=true', { ...key, status: 2 });
      const enable = await call(acct, 'PUT', '/api/token/?status_only=true', { ...key, status: 1 });
      const remove = await call(acct, 'DELETE', `/api/token/${key.id}`);
      const expected: Array<[typeof create, string]> = [
        [create, 'token.create'], [update, 'token.update'], [disable, 'token.disable'], [enable, 'token.enable'],
        [remove, 'token.delete'],
      ];
      for (const [res, action] of expected) {
        expect(res.status).toBe(200);
        const row = await auditRow(res.headers.get('x-request-id'));
        expect(row).toMatchObject({ account_id: acct.id, action, target_type: 'token', target_id: String(key.id) });
        expect(row.created_at).toBeGreaterThanOrEqual(t0);
        expect(row.created_at).toBeLessThanOrEqual(now() + 1);
      }
      const rows = await gw.db.query('SELECT * FROM audit_events WHERE account_id = $1', [acct.id]);
      expect(rows.rows.length).toBe(6); // account.create + the five writes
      const dump = JSON.stringify(rows.rows);
      expect(dump).not.toContain(key.key);
      expect(dump).not.toContain(acct.systemToken);
    });

    it('never writes key material or the system token to the logs', async () => {
      const acct = await newAccount(gw.db);
      const key = await createKey(acct, { name: 'secret', remain_quota: 1 });
      const ids: string[] = [];
      const track = async (p: ReturnType<typeof call>) => {
        const res = await p;
        ids.push(res.headers.get('x-request-id')!);
        return res;
      };
      await track(call(acct, 'GET', `/api/token/${key.id}`));
      await track(call(acct, 'GET', '/api/token/'));
      await track(call(acct, 'PUT', '/api/token/', { ...key, name: 'secret-2' }));
      await track(call(acct, 'PUT', '/api/token/?status_only=true', { ...key, status: 2 }));
      // Failures too: a key on the management API, a bad body that echoes the key, a malformed body.
      await track(call(`sk-${key.key}`, 'GET', '/api/token/'));
      await track(call(acct, 'PUT', '/api/token/', { ...key, remain_quota: key.key }));
      const malformed = await http(gw.baseUrl, 'POST', '/api/token/', { auth: acct.systemToken, rawBody: `{"name":"${key.key}"` });
      expect(malformed.status).toBe(400);
      await track(call(acct, 'DELETE', `/api/token/${key.id}`));

      const logs = gw.logs.text();
      // The capture does see these requests, so the absence below means something.
      for (const id of ids) expect(logs).toContain(id);
      expect(logs).not.toContain(key.key);
      expect(logs).not.toContain(acct.systemToken);
    });
  });
});
