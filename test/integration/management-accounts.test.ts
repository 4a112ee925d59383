// test modes: postgres, embedded
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';

/** The account side of `/api/*`: issuing a system token with the password, and the audit trail. */
describe('management: system token and audit', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  const now = () => Math.floor(Date.now() / 1000);

  async function call(method: string, path: string, opts: { auth?: string; body?: unknown; rawBody?: string } = {}) {
    const res = await http(gw.baseUrl, method, path, opts);
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    return res;
  }

  describe('POST /api/user/token', () => {
    it('issues a new system token for the password; the old one stops working at once', async () => {
      const acct = await newAccount(gw.db);
      expect((await call('GET', '/api/token/', { auth: acct.systemToken })).status).toBe(200);

      const t0 = now();
      const res = await call('POST', '/api/user/token', { body: { username: acct.username, password: acct.password } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, message: '', data: expect.any(String) });
      const fresh: string = res.body.data;
      expect(fresh).toMatch(/^[A-Za-z0-9]{32}$/);
      expect(fresh).not.toBe(acct.systemToken);

      const old = await call('GET', '/api/token/', { auth: acct.systemToken });
      expect(old.status).toBe(401);
      expect(old.body).toEqual({ success: false, message: 'invalid system token' });
      const ok = await call('GET', '/api/token/', { auth: fresh });
      expect(ok.status).toBe(200);
      // The new token is the account's: keys it creates belong to the same owner.
      const created = await call('POST', '/api/token/', { auth: fresh, body: { name: 'after-rotation' } });
      expect(created.body.data.user_id).toBe(acct.id);

      const audit = await gw.db.query('SELECT * FROM audit_events WHERE request_id = $1', [res.headers.get('x-request-id')]);
      expect(audit.rows).toHaveLength(1);
      expect(audit.rows[0]).toMatchObject({
        account_id: acct.id, action: 'account.system_token.rotate', target_type: 'account', target_id: String(acct.id),
      });
      expect(audit.rows[0].created_at).toBeGreaterThanOrEqual(t0);
      const everything = JSON.stringify((await gw.db.query('SELECT * FROM audit_events WHERE account_id = $1', [acct.id])).rows);
      expect(everything).not.toContain(fresh);
      expect(everything).not.toContain(acct.systemToken);
      expect(everything).not.toContain(acct.password);

      const logs = gw.logs.text();
      expect(logs).toContain(res.headers.get('x-request-id'));
      expect(logs).not.toContain(fresh);
      expect(logs).not.toContain(acct.systemToken);
      expect(logs).not.toContain(acct.password);
    });

    it('needs no Authorization header, and ignores one', async () => {
      const acct = await newAccount(gw.db);
      const res = await call('POST', '/api/user/token', {
        auth: 'sk-whatever', body: { username: acct.username, password: acct.password },
      });
      expect(res.status).toBe(200);
    });

    it('answers a wrong password or an unknown user with the same 401, and keeps the token', async () => {
      const acct = await newAccount(gw.db);
      const wrong = await call('POST', '/api/user/token', { body: { username: acct.username, password: 'not the password' } });
      expect(wrong.status).toBe(401);
      expect(wrong.body).toEqual({ success: false, message: expect.any(String) });
      const unknown = await call('POST', '/api/user/token', { body: { username: `${acct.username}-nope`, password: acct.password } });
      expect(unknown.status).toBe(401);
      expect(unknown.body).toEqual(wrong.body);
      expect((await call('GET', '/api/token/', { auth: acct.systemToken })).status).toBe(200);
      const rotations = await gw.db.query(
        "SELECT 1 FROM audit_events WHERE account_id = $1 AND action = 'account.system_token.rotate'", [acct.id],
      );
      expect(rotations.rowCount).toBe(0);
    });

    it.each([
      ['username missing', { password: 'x' }, 'username'],
      ['username empty', { username: '', password: 'x' }, 'username'],
      ['username as a number', { username: 5, password: 'x' }, 'username'],
      ['password missing', { username: 'someone' }, 'password'],
      ['password as a number', { username: 'someone', password: 12345678 }, 'password'],
    ])('rejects %s with a 400 naming the field', async (_what, body, field) => {
      const res = await call('POST', '/api/user/token', { body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ success: false, message: expect.stringMatching(new RegExp(`^${field}: `)) });
    });

    it('answers malformed JSON with a 400', async () => {
      const res = await call('POST', '/api/user/token', { rawBody: '{"username":' });
      expect(res.status).toBe(400);
      expect(res.body.success).toBe(false);
    });
  });

  describe('GET /api/audit/', () => {
    it("pages the account's own events, newest first, with X-Total-Count", async () => {
      const a = await newAccount(gw.db);
      const b = await newAccount(gw.db);
      const create = await call('POST', '/api/token/', { auth: a.systemToken, body: { name: 'one' } });
      const key = create.body.data;
      const update = await call('PUT', '/api/token/', { auth: a.systemToken, body: { ...key, name: 'two' } });
      const remove = await call('DELETE', `/api/token/${key.id}`, { auth: a.systemToken });
      await call('POST', '/api/token/', { auth: b.systemToken, body: { name: 'b' } });

      const all = await call('GET', '/api/audit/', { auth: a.systemToken });
      expect(all.status).toBe(200);
      expect(all.body.success).toBe(true);
      expect(all.headers.get('x-total-count')).toBe('4');
      expect(all.body.data.map((e: any) => e.action)).toEqual(['token.delete', 'token.update', 'token.create', 'account.create']);
      expect(all.body.data.map((e: any) => e.request_id)).toEqual([
        remove.headers.get('x-request-id'), update.headers.get('x-request-id'), create.headers.get('x-request-id'), null,
      ]);
      expect(all.body.data[0]).toMatchObject({
        id: expect.any(Number), target_type: 'token', target_id: String(key.id), created_at: expect.any(Number),
        details: expect.any(Object),
      });
      expect(JSON.stringify(all.body)).not.toContain(key.key);

      const p2 = await call('GET', '/api/audit/?p=2&page_size=3', { auth: a.systemToken });
      expect(p2.body.data.map((e: any) => e.action)).toEqual(['account.create']);
      expect(p2.headers.get('x-total-count')).toBe('4');
      const p0 = await call('GET', '/api/audit/?p=0&page_size=1', { auth: a.systemToken });
      expect(p0.body.data.map((e: any) => e.action)).toEqual(['token.delete']);

      const bAll = await call('GET', '/api/audit', { auth: b.systemToken });
      expect(bAll.body.data.map((e: any) => e.action)).toEqual(['token.create', 'account.create']);
    });

    it('needs a system token', async () => {
      const acct = await newAccount(gw.db);
      const key = (await call('POST', '/api/token/', { auth: acct.systemToken, body: {} })).body.data;
      for (const auth of [undefined, `sk-${key.key}`]) {
        const res = await call('GET', '/api/audit/', { auth });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ success: false, message: 'invalid system token' });
      }
    });
  });
});
