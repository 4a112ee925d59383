// test modes: postgres, embedded
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';

/**
 * Every bad request to `/api/*` is a 400 `{success:false, message}` naming the field, never a 500,
 * and writes nothing; wrong or missing credentials are a 401 before anything else is looked at.
 */
describe('management: validation and credentials', () => {
  let gw: TestGateway;
  let acct: Awaited<ReturnType<typeof newAccount>>;
  let key: Record<string, any>;

  beforeAll(async () => {
    gw = await startGateway();
    acct = await newAccount(gw.db);
    const res = await http(gw.baseUrl, 'POST', '/api/token/', {
      auth: acct.systemToken,
      body: { name: 'original', remain_quota: 100, group: 'g', models: 'm', expired_time: -1 },
    });
    expect(res.status).toBe(200);
    key = res.body.data;
  });
  afterAll(async () => {
    await gw.close();
  });

  async function call(method: string, path: string, opts: { body?: unknown; rawBody?: string; auth?: string; headers?: Record<string, string> } = {}) {
    const res = await http(gw.baseUrl, method, path, { auth: acct.systemToken, ...opts });
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    return res;
  }

  /** A 400 in the management envelope whose message starts with the offending field. */
  function expect400(res: { status: number; body: any }, field: string) {
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, message: expect.any(String) });
    expect(res.body.message.startsWith(`${field}: `) || res.body.message.startsWith(`${field} `)).toBe(true);
  }

  const now = () => Math.floor(Date.now() / 1000);

  async function keyCount(): Promise<number> {
    const res = await gw.db.query('SELECT count(*)::int AS n FROM tokens WHERE user_id = $1', [acct.id]);
    return res.rows[0].n;
  }

  async function unchanged() {
    const read = await call('GET', `/api/token/${key.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(key);
  }

  async function noAuditFor(res: { headers: Headers }) {
    const rows = await gw.db.query('SELECT 1 FROM audit_events WHERE request_id = $1', [res.headers.get('x-request-id')]);
    expect(rows.rowCount).toBe(0);
  }

  describe('create body', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['remain_quota as a string', { remain_quota: '10' }, 'remain_quota'],
      ['remain_quota negative', { remain_quota: -1 }, 'remain_quota'],
      ['remain_quota fractional', { remain_quota: 1.5 }, 'remain_quota'],
      ['remain_quota beyond safe integers', { remain_quota: 2 ** 60 }, 'remain_quota'],
      ['unlimited_quota as a string', { unlimited_quota: 'yes' }, 'unlimited_quota'],
      ['unlimited_quota as a number', { unlimited_quota: 1 }, 'unlimited_quota'],
      ['name as a number', { name: 5 }, 'name'],
      ['name too long', { name: 'x'.repeat(256) }, 'name'],
      ['group as an object', { group: {} }, 'group'],
      ['models as an array', { models: ['a', 'b'] }, 'models'],
      ['expired_time in the past', { expired_time: now() - 60 }, 'expired_time'],
      ['expired_time zero', { expired_time: 0 }, 'expired_time'],
      ['expired_time -2', { expired_time: -2 }, 'expired_time'],
      ['expired_time in milliseconds', { expired_time: Date.now() + 3_600_000 }, 'expired_time'],
      ['expired_time as a string', { expired_time: '-1' }, 'expired_time'],
      ['status 7', { status: 7 }, 'status'],
      ['status as a string', { status: '1' }, 'status'],
    ];
    it.each(cases)('rejects %s with a 400 naming the field, creating nothing', async (_what, body, field) => {
      const before = await keyCount();
      const res = await call('POST', '/api/token/', { body: { name: 'x', ...body } });
      expect400(res, field);
      expect(await keyCount()).toBe(before);
      await noAuditFor(res);
    });

    it('accepts -1 and a future expired_time, and null as "omitted"', async () => {
      const never = await call('POST', '/api/token/', { body: { expired_time: -1 } });
      expect(never.status).toBe(200);
      const future = await call('POST', '/api/token/', { body: { expired_time: now() + 86_400 } });
      expect(future.status).toBe(200);
      const nulls = await call('POST', '/api/token/', { body: { name: null, remain_quota: null, models: null, expired_time: null } });
      expect(nulls.status).toBe(200);
      expect(nulls.body.data).toMatchObject({ name: '', remain_quota: 0, models: '', expired_time: -1 });
    });
  });

  describe('malformed bodies', () => {
    it.each([
      ['truncated JSON', '{"name":'],
      ['not JSON at all', 'name=x'],
      ['trailing garbage', '{"name":"x"} x'],
    ])('answers %s with a 400, never a 500', async (_what, rawBody) => {
      for (const method of ['POST', 'PUT']) {
        const res = await call(method, '/api/token/', { rawBody });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ success: false, message: expect.any(String) });
      }
    });

    it('rejects a body that is not an object', async () => {
      for (const body of [[1, 2], 'text', 42, null]) {
        const res = await call('POST', '/api/token/', { body: body === null ? undefined : body, rawBody: body === null ? 'null' : undefined });
        expect(res.status).toBe(400);
        expect(res.body.success).toBe(false);
      }
    });

    it('rejects an empty JSON body with a 400', async () => {
      const res = await call('POST', '/api/token/', { rawBody: '' });
      expect(res.status).toBe(400);
      expect(res.body.success).toBe(false);
    });
  });

  describe('update body', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['id missing', { id: undefined }, 'id'],
      ['id as a string', { id: String(0) }, 'id'],
      ['id zero', { id: 0 }, 'id'],
      ['remain_quota negative', { remain_quota: -5 }, 'remain_quota'],
      ['remain_quota as a string', { remain_quota: '10' }, 'remain_quota'],
      ['unlimited_quota as a string', { unlimited_quota: 'yes' }, 'unlimited_quota'],
      ['name as a number', { name: 5 }, 'name'],
      ['expired_time in the past', { expired_time: now() - 1 }, 'expired_time'],
      ['status 7', { status: 7 }, 'status'],
    ];
    it.each(cases)('rejects %s and leaves the record unchanged', async (_what, change, field) => {
      const res = await call('PUT', '/api/token/', { body: { ...key, name: 'should-not-stick', ...change } });
      expect400(res, field);
      await noAuditFor(res);
      await unchanged();
    });

    it('accepts, and ignores, any status a record can read back with (1-4) on a whole-object PUT', async () => {
      for (const status of [2, 3, 4]) {
        const res = await call('PUT', '/api/token/', { body: { ...key, status } });
        expect(res.status).toBe(200);
        expect(res.body.data).toEqual(key);
      }
      await unchanged();
    });

    it('rejects a bad status_only value', async () => {
      const res = await call('PUT', '/api/token/?status_only=maybe', { body: { id: key.id, status: 2 } });
      expect400(res, 'status_only');
      await unchanged();
    });

    it.each([
      ['status 7', { status: 7 }],
      ['status 0', { status: 0 }],
      ['status 3 (expired is derived, never written)', { status: 3 }],
      ['status as a string', { status: '2' }],
      ['status missing', { status: undefined }],
    ])('status_only rejects %s naming status, changing nothing', async (_what, change) => {
      const res = await call('PUT', '/api/token/?status_only=true', { body: { ...key, ...change } });
      expect400(res, 'status');
      await noAuditFor(res);
      await unchanged();
    });

    it('status_only still needs an integer id', async () => {
      const res = await call('PUT', '/api/token/?status_only=true', { body: { id: 'abc', status: 2 } });
      expect400(res, 'id');
      await unchanged();
    });
  });

  describe('ids in the path', () => {
    it.each(['abc', '1.5', '-1', '0', '1e3', '0x10', '99999999999999999999'])('GET/DELETE /api/token/%s is a 400 naming id', async (id) => {
      for (const method of ['GET', 'DELETE']) {
        const res = await call(method, `/api/token/${encodeURIComponent(id)}`);
        expect400(res, 'id');
      }
      await unchanged();
    });

    it('a well-formed id that does not exist is a 404', async () => {
      for (const method of ['GET', 'DELETE']) {
        const res = await call(method, '/api/token/987654321');
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ success: false, message: expect.any(String) });
      }
      const put = await call('PUT', '/api/token/', { body: { id: 987654321 } });
      expect(put.status).toBe(404);
    });
  });

  describe('paging', () => {
    it.each([
      ['page_size=0', 'page_size'],
      ['page_size=101', 'page_size'],
      ['page_size=abc', 'page_size'],
      ['page_size=-1', 'page_size'],
      ['page_size=2.5', 'page_size'],
      ['p=-1', 'p'],
      ['p=abc', 'p'],
    ])('GET /api/token/?%s is a 400 naming %s', async (query, field) => {
      expect400(await call('GET', `/api/token/?${query}`), field);
      expect400(await call('GET', `/api/audit/?${query}`), field);
    });

    it('accepts the bounds 1 and 100', async () => {
      for (const size of [1, 100]) {
        const res = await call('GET', `/api/token/?p=1&page_size=${size}`);
        expect(res.status).toBe(200);
        expect(res.body.data.length).toBeLessThanOrEqual(size);
      }
    });
  });

  describe('credentials', () => {
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/api/token/'],
      ['GET', '/api/token/1'],
      ['POST', '/api/token/', { name: 'x' }],
      ['PUT', '/api/token/', { id: 1 }],
      ['PUT', '/api/token/?status_only=true', { id: 1, status: 2 }],
      ['DELETE', '/api/token/1'],
      ['GET', '/api/audit/'],
    ];

    it('rejects an API key on /api/* with 401 "invalid system token", in every header form', async () => {
      const before = await keyCount();
      for (const auth of [`sk-${key.key}`, `Bearer sk-${key.key}`, key.key, `Bearer ${key.key}`]) {
        for (const [method, path, body] of routes) {
          const res = await call(method, path, { auth, body });
          expect(res.status).toBe(401);
          expect(res.body).toEqual({ success: false, message: 'invalid system token' });
        }
      }
      expect(await keyCount()).toBe(before);
      await unchanged();
    });

    it('rejects a missing or unknown credential with 401, before looking at the body', async () => {
      for (const [method, path] of routes) {
        const hasBody = method === 'POST' || method === 'PUT';
        const missing = await http(gw.baseUrl, method, path, hasBody ? { body: { remain_quota: 'bad' } } : {});
        expect(missing.status).toBe(401);
        expect(missing.body).toEqual({ success: false, message: 'invalid system token' });
        expect(missing.headers.get('x-request-id')).toBeTruthy();
        const wrong = await call(method, path, { auth: 'not-a-real-token', ...(hasBody ? { rawBody: '{broken' } : {}) });
        expect(wrong.status).toBe(401);
        expect(wrong.body.success).toBe(false);
      }
    });

    it('tolerates "Bearer <system token>"', async () => {
      const res = await call('GET', `/api/token/${key.id}`, { auth: `Bearer ${acct.systemToken}` });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual(key);
    });
  });
});
