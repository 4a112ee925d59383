// test modes: postgres, embedded
import { randomUUID } from 'node:crypto';
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';

// Password and token attempts are throttled by username and by client address, shared by every replica through
// PostgreSQL; failures are audited; weak passwords are refused; a password change or token rotation ends the
// account's console sessions.

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('sign-in security', () => {
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    // Two replicas on one database (on PostgreSQL; the embedded default is one process, so one gateway plays both);
    // both believe X-Forwarded-For from loopback, so tests choose client addresses.
    a = await startGateway({ trustProxy: ['127.0.0.1'] });
    b = process.env.GATEWAY_TEST_DB_MODE === 'embedded' ? a : await startGateway({ trustProxy: ['127.0.0.1'] });
  });
  afterAll(async () => {
    await a.close();
    if (b !== a) await b.close();
  });

  /** A client address never used before (the documentation prefix, random per run), so tests never share a counter. */
  const run = randomUUID().slice(0, 4);
  let n = 0;
  const address = () => `2001:db8:${run}::${(++n).toString(16)}`;
  const newToken = (gw: TestGateway, body: unknown, from = address()) =>
    http(gw.baseUrl, 'POST', '/api/user/token', { body, headers: { 'x-forwarded-for': from } });
  const signIn = (gw: TestGateway, body: unknown, from = address()) =>
    http(gw.baseUrl, 'POST', '/console/session', { body, headers: { 'x-forwarded-for': from } });

  it('locks a username after 5 failures on any replica: even the right password waits, then works', async () => {
    const acct = await newAccount(a.db);
    for (let i = 0; i < 5; i++) {
      const gw = i % 2 === 0 ? a : b;
      const res = await newToken(gw, { username: acct.username, password: `wrong ${i}` });
      expect(res.status).toBe(401);
    }
    // The other replica, another address, the right password: still locked (the lock is on the username).
    const locked = await newToken(b, { username: acct.username, password: acct.password });
    expect(locked.status).toBe(429);
    expect(locked.body).toEqual({ success: false, message: expect.stringMatching(/^too many failed sign-in attempts; try again in \d+ seconds$/) });
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(locked.headers.get('x-request-id')).toMatch(/^req_/);
    const console = await signIn(a, { username: acct.username, password: acct.password });
    expect(console.status).toBe(429);
    // The first lock is 2 seconds.
    await wait(Number(locked.headers.get('retry-after')) * 1000 + 100);
    const ok = await newToken(a, { username: acct.username, password: acct.password });
    expect(ok.status).toBe(200);
    // Success clears the username's count: one more failure does not lock again.
    expect((await newToken(a, { username: acct.username, password: 'wrong again' })).status).toBe(401);
    const latest = await newToken(a, { username: acct.username, password: acct.password });
    expect(latest.status).toBe(200);

    // Every failure is in the account's audit log, with where it came from and how; never the password tried.
    const audit = await http(a.baseUrl, 'GET', '/api/audit/?page_size=100', { auth: latest.body.data });
    const failed = audit.body.data.filter((e: { action: string }) => e.action === 'account.sign_in.failed');
    expect(failed).toHaveLength(6);
    expect(failed.at(-1).details).toMatchObject({ via: 'api', reason: 'wrong_password', address: expect.stringMatching(/^2001:db8:/) });
    expect(failed.some((e: { details: { locked_seconds?: number } }) => e.details.locked_seconds === 2)).toBe(true);
    expect(JSON.stringify(audit.body)).not.toContain('wrong 1');
  });

  it('unknown usernames are throttled and audited the same way, without an account', async () => {
    const ghost = `ghost_${randomUUID().slice(0, 8)}`;
    for (let i = 0; i < 5; i++) expect((await newToken(a, { username: ghost, password: 'whatever it is' })).status).toBe(401);
    expect((await newToken(a, { username: ghost, password: 'whatever it is' })).status).toBe(429);
    const rows = await a.db.query(`SELECT details FROM audit_events WHERE account_id IS NULL AND action = 'account.sign_in.failed' AND details->>'reason' = 'unknown_user' ORDER BY id DESC LIMIT 5`);
    expect(rows.rows).toHaveLength(5);
    expect(JSON.stringify(rows.rows)).not.toContain(ghost);
  });

  it('locks a client address after 20 failures over any usernames and wrong system tokens; other addresses and valid tokens pass', async () => {
    const from = address();
    const acct = await newAccount(a.db);
    for (let i = 0; i < 10; i++) expect((await newToken(a, { username: `nobody_${randomUUID()}`, password: 'guess guess guess' }, from)).status).toBe(401);
    for (let i = 0; i < 10; i++) {
      const res = await http(b.baseUrl, 'GET', '/api/token/', { auth: `not-a-token-${i}`, headers: { 'x-forwarded-for': from } });
      expect(res.status).toBe(401);
    }
    // 20 failures from this address: its next attempt, of any kind, is refused unchecked.
    expect((await newToken(a, { username: acct.username, password: acct.password }, from)).status).toBe(429);
    const scan = await http(a.baseUrl, 'GET', '/api/token/', { auth: 'not-a-token', headers: { 'x-forwarded-for': from } });
    expect([scan.status, Number(scan.headers.get('retry-after')) > 0]).toEqual([429, true]);
    expect((await signIn(b, { token: 'not-a-token' }, from)).status).toBe(429);
    // A valid system token from that address still works; another address is not affected.
    expect((await http(a.baseUrl, 'GET', '/api/token/', { auth: acct.systemToken, headers: { 'x-forwarded-for': from } })).status).toBe(200);
    expect((await newToken(a, { username: acct.username, password: acct.password }, address())).status).toBe(200);
  });

  it('refuses weak new passwords; a password change ends the console sessions and needs the current password', async () => {
    const acct = await newAccount(a.db);
    const session = await signIn(a, { username: acct.username, password: acct.password });
    const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0];
    expect((await http(a.baseUrl, 'GET', '/api/token/', { headers: { cookie } })).status).toBe(200);

    const change = (new_password: string, password = acct.password) =>
      http(a.baseUrl, 'PUT', '/api/user/password', { body: { username: acct.username, password, new_password }, headers: { 'x-forwarded-for': address() } });
    for (const [weak, reason] of [
      ['password', 'must be at least 12 characters'],
      ['Password123!', 'is one of the most common passwords'],
      ['qwertyuiop2024', 'is one of the most common passwords'],
      [`${acct.username}-2026`, 'must not contain the username'],
      ['aaaaaaaaaaaaaaa', 'must use more than a few different characters'],
      ['123456789012', 'must not be only digits'],
    ]) {
      const res = await change(weak);
      expect([weak, res.status, res.body.message]).toEqual([weak, 400, `password: ${reason}`]);
    }
    expect((await change('a much better passphrase', 'not the password')).status).toBe(401);
    expect((await http(a.baseUrl, 'GET', '/api/token/', { headers: { cookie } })).status).toBe(200);

    const changed = await change('a much better passphrase');
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ success: true, message: '', data: null });
    // The console session is over; the system token still works; the old password does not, the new one does.
    expect((await http(a.baseUrl, 'GET', '/api/token/', { headers: { cookie } })).status).toBe(401);
    expect((await http(b.baseUrl, 'GET', '/console/session', { headers: { cookie } })).body.data).toBeNull();
    expect((await http(a.baseUrl, 'GET', '/api/token/', { auth: acct.systemToken })).status).toBe(200);
    expect((await signIn(a, { username: acct.username, password: acct.password })).status).toBe(401);
    expect((await signIn(a, { username: acct.username, password: 'a much better passphrase' })).status).toBe(200);
    const audit = await http(a.baseUrl, 'GET', '/api/audit/?page_size=100', { auth: acct.systemToken });
    expect(audit.body.data.map((e: { action: string }) => e.action)).toContain('account.password.change');
  });

  it('a system token rotation ends every console session of the account at once, on every replica', async () => {
    const acct = await newAccount(a.db);
    const byPassword = await signIn(a, { username: acct.username, password: acct.password });
    const byToken = await signIn(b, { token: acct.systemToken });
    const cookies = [byPassword, byToken].map((s) => (s.headers.get('set-cookie') ?? '').split(';')[0]);
    for (const cookie of cookies) expect((await http(b.baseUrl, 'GET', '/api/token/', { headers: { cookie } })).status).toBe(200);
    const rotated = await newToken(a, { username: acct.username, password: acct.password });
    expect(rotated.status).toBe(200);
    for (const cookie of cookies) {
      expect((await http(a.baseUrl, 'GET', '/api/token/', { headers: { cookie } })).status).toBe(401);
      expect((await http(b.baseUrl, 'POST', '/api/token/', { headers: { cookie }, body: { name: 'after rotation' } })).status).toBe(401);
    }
  });

  it('channel health is the operator\'s view; the console tells the page whether to show it', async () => {
    const user = await newAccount(a.db);
    const admin = await newAccount(a.db, { admin: true });
    expect((await http(a.baseUrl, 'GET', '/api/channel/', { auth: user.systemToken })).status).toBe(403);
    expect((await http(a.baseUrl, 'GET', '/api/channel/', { auth: admin.systemToken })).status).toBe(200);
    expect((await signIn(a, { token: user.systemToken })).body.data.is_admin).toBe(false);
    expect((await signIn(a, { token: admin.systemToken })).body.data.is_admin).toBe(true);
  });
});
