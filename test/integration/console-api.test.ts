// test modes: postgres, embedded
import { http, newAccount } from '../helpers/harness';
import { newKey, startRelayFixture, type RelayFixture } from '../helpers/relay-fixture';

/** Issue 9 §1: the console's sign-in (HttpOnly SameSite=Strict cookie, CSRF on writes) and the /api/* it reads. */
describe('console session and the endpoints behind the console', () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await startRelayFixture();
  });
  afterAll(async () => {
    await fx.close();
  });

  const signIn = async (body: unknown) => {
    const res = await http(fx.gw.baseUrl, 'POST', '/console/session', { body });
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0];
    return { res, cookie, csrf: res.body?.data?.csrf_token as string };
  };

  it('signs in with username and password or a system token; the cookie is HttpOnly and SameSite=Strict', async () => {
    const acct = await newAccount(fx.gw.db);
    const byPassword = await signIn({ username: acct.username, password: acct.password });
    expect(byPassword.res.status).toBe(200);
    expect(byPassword.res.body).toEqual({ success: true, message: '', data: { username: acct.username, csrf_token: expect.any(String), is_admin: false } });
    const setCookie = byPassword.res.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^gw_console=[^;]+;/);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    expect(setCookie).toMatch(/Path=\//);
    // The password sign-in does not rotate the system token: scripts using it keep working.
    expect((await http(fx.gw.baseUrl, 'GET', '/api/token/', { auth: acct.systemToken })).status).toBe(200);

    const byToken = await signIn({ token: acct.systemToken });
    expect(byToken.res.status).toBe(200);
    const who = await http(fx.gw.baseUrl, 'GET', '/console/session', { headers: { cookie: byToken.cookie } });
    expect(who.body.data).toEqual({ username: acct.username, csrf_token: byToken.csrf, is_admin: false });

    const wrong = await signIn({ username: acct.username, password: 'not the password' });
    expect(wrong.res.status).toBe(401);
    expect(wrong.res.body).toEqual({ success: false, message: expect.any(String) });
    expect(wrong.res.headers.get('set-cookie')).toBeNull();
    expect((await signIn({ token: 'nope' })).res.status).toBe(401);
    expect((await signIn({ username: acct.username })).res.status).toBe(400);
    expect((await http(fx.gw.baseUrl, 'GET', '/console/session', {})).body).toEqual({ success: true, message: '', data: null });
    expect((await http(fx.gw.baseUrl, 'GET', '/console/session', { headers: { cookie: 'gw_console=forged' } })).body.data).toBeNull();
    const audit = await http(fx.gw.baseUrl, 'GET', '/api/audit/?page_size=100', { auth: acct.systemToken });
    expect(audit.body.data.map((e: { action: string }) => e.action)).toContain('console.sign_in');
    expect(JSON.stringify(audit.body)).not.toContain(byToken.cookie.split('=')[1]);
  });

  it('the cookie reads /api/*; a write needs the X-CSRF-Token; signing out ends the session', async () => {
    const acct = await newAccount(fx.gw.db);
    const { cookie, csrf } = await signIn({ username: acct.username, password: acct.password });
    const list = await http(fx.gw.baseUrl, 'GET', '/api/token/', { headers: { cookie } });
    expect(list.status).toBe(200);

    const noCsrf = await http(fx.gw.baseUrl, 'POST', '/api/token/', { headers: { cookie }, body: { name: 'from-console' } });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body).toEqual({ success: false, message: expect.stringContaining('X-CSRF-Token') });
    const badCsrf = await http(fx.gw.baseUrl, 'POST', '/api/token/', { headers: { cookie, 'x-csrf-token': `${csrf}x` }, body: { name: 'from-console' } });
    expect(badCsrf.status).toBe(403);
    expect((await http(fx.gw.baseUrl, 'GET', '/api/token/', { auth: acct.systemToken })).headers.get('x-total-count')).toBe('0');

    const made = await http(fx.gw.baseUrl, 'POST', '/api/token/', { headers: { cookie, 'x-csrf-token': csrf }, body: { name: 'from-console' } });
    expect(made.status).toBe(200);
    expect(made.body.data).toMatchObject({ name: 'from-console', key: expect.any(String) });

    // Another account's session sees only its own keys.
    const other = await newAccount(fx.gw.db);
    const otherSession = await signIn({ token: other.systemToken });
    expect((await http(fx.gw.baseUrl, 'GET', '/api/token/', { headers: { cookie: otherSession.cookie } })).body.data).toEqual([]);

    const out = await http(fx.gw.baseUrl, 'DELETE', '/console/session', { headers: { cookie } });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/gw_console=;/);
    expect((await http(fx.gw.baseUrl, 'GET', '/api/token/', { headers: { cookie } })).status).toBe(401);
  });

  it('GET /api/token/ filters by name, status and group', async () => {
    const acct = await newAccount(fx.gw.db);
    const mk = (body: Record<string, unknown>) => http(fx.gw.baseUrl, 'POST', '/api/token/', { auth: acct.systemToken, body });
    await mk({ name: 'alpha-one' });
    await mk({ name: 'Alpha-two', group: 'vip' });
    const third = (await mk({ name: 'beta_100%' })).body.data;
    await http(fx.gw.baseUrl, 'PUT', '/api/token/?status_only=true', { auth: acct.systemToken, body: { ...third, status: 2 } });
    const names = async (q: string) =>
      (await http(fx.gw.baseUrl, 'GET', `/api/token/?${q}`, { auth: acct.systemToken })).body.data.map((t: { name: string }) => t.name).sort();
    expect(await names('keyword=alpha')).toEqual(['Alpha-two', 'alpha-one']);
    expect(await names('keyword=%25')).toEqual(['beta_100%']);
    expect(await names('keyword=_')).toEqual(['beta_100%']);
    expect(await names('status=2')).toEqual(['beta_100%']);
    expect(await names('group=vip')).toEqual(['Alpha-two']);
    expect(await names('group=default&status=1')).toEqual(['alpha-one']);
    expect((await http(fx.gw.baseUrl, 'GET', '/api/token/?status=9', { auth: acct.systemToken })).status).toBe(400);
  });

  it('GET /api/channel/ shows each channel\'s recent health, never its URL or key; /api/log/stat/daily sums per day and model', async () => {
    const { client, acct } = await newKey(fx.gw);
    for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
    fx.primary.addFault({ kind: 'status', status: 503, count: 1 });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'again' }], max_tokens: 4 });

    // Every account's traffic is in it: the operator's view only.
    const denied = await http(fx.gw.baseUrl, 'GET', '/api/channel/', { auth: acct.systemToken });
    expect([denied.status, denied.body.success]).toEqual([403, false]);
    const admin = await newAccount(fx.gw.db, { admin: true });
    const res = await http(fx.gw.baseUrl, 'GET', '/api/channel/', { auth: admin.systemToken });
    expect(res.status).toBe(200);
    const primary = res.body.data.find((c: { name: string }) => c.name === 'primary');
    expect(primary).toMatchObject({ type: 'openai', source: 'replica', consecutive_failures: expect.any(Number), cooling_until: null });
    expect(primary.attempts).toBeGreaterThanOrEqual(4);
    expect(primary.success_rate).toBeGreaterThan(0);
    expect(primary.success_rate).toBeLessThan(1);
    expect(primary.latency_ms_p50).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(res.body)).not.toContain('key-primary');
    expect(JSON.stringify(res.body)).not.toContain(fx.primary.url);
    expect((await http(fx.gw.baseUrl, 'GET', '/api/channel/', {})).status).toBe(401);

    await fx.gw.services.api.billing.barrier();
    const daily = await http(fx.gw.baseUrl, 'GET', '/api/log/stat/daily', { auth: acct.systemToken });
    expect(daily.status).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    expect(daily.body.data).toEqual([
      {
        day: today,
        model: 'gpt-4o-mini',
        quota: expect.any(Number),
        count: 4,
        prompt_tokens: expect.any(Number),
        completion_tokens: expect.any(Number),
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
        image_input_tokens: 0,
        audio_input_tokens: 0,
        audio_output_tokens: 0,
      },
    ]);
    const stat = await http(fx.gw.baseUrl, 'GET', '/api/log/stat', { auth: acct.systemToken });
    expect(daily.body.data[0].quota).toBe(stat.body.data.quota);
    expect(daily.body.data[0].prompt_tokens).toBe(stat.body.data.prompt_tokens);
    expect(daily.body.data[0].completion_tokens).toBe(stat.body.data.completion_tokens);
  });
});
