// test modes: postgres, embedded
import { randomUUID } from 'node:crypto';
import { InvalidApiKeyError } from '../../src/domain/errors';
import { release, reserve, settle } from '../../src/domain/billing/holds';
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';
import { createHoldRepository } from '../../src/db/repositories/holds';

describe('hardening: client mistakes stay 4xx, money paths stay consistent', () => {
  let gw: TestGateway;
  let acct: Awaited<ReturnType<typeof newAccount>>;
  beforeAll(async () => {
    gw = await startGateway();
    acct = await newAccount(gw.db);
  });
  afterAll(async () => {
    await gw.close();
  });

  const createKey = async (body: Record<string, unknown>) => {
    const res = await http(gw.baseUrl, 'POST', '/api/token/', { auth: acct.systemToken, body });
    expect(res.status).toBe(200);
    return res.body.data as { id: number; key: string };
  };

  it.each([
    ['POST /api/token/', '/api/token/', { name: 'a\u0000b' }, 'name'],
    ['POST /api/token/ models', '/api/token/', { models: 'gpt-4o,\u0000' }, 'models'],
    ['POST /api/token/batch', '/api/token/batch', { count: 2, name: 'a\u0000b' }, 'name'],
  ])('rejects a NUL character with 400 naming the field: %s', async (_label, path, body, field) => {
    const res = await http(gw.baseUrl, 'POST', path, { auth: acct.systemToken, body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, message: `${field}: must not contain NUL characters` });
  });

  it('rejects a NUL character in the login body with 400, before any lookup', async () => {
    const res = await http(gw.baseUrl, 'POST', '/api/user/token', { body: { username: 'a\u0000b', password: 'whatever' } });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('username: must not contain NUL characters');
  });

  it('bounds what one batch request can write', async () => {
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', {
      auth: acct.systemToken,
      body: { count: 100_000, name: 'huge', models: 'm'.repeat(65_536) },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^models: with group, at most 67,108,864 characters over the whole batch/);
  });

  it('answers a malformed URL in the family format with x-request-id', async () => {
    const mgmt = await http(gw.baseUrl, 'GET', '/api/token/%ff', { auth: acct.systemToken });
    expect(mgmt.status).toBe(400);
    expect(mgmt.body).toEqual({ success: false, message: 'The request URL is malformed' });
    expect(mgmt.headers.get('x-request-id')).toMatch(/^req_/);
    const inference = await http(gw.baseUrl, 'GET', '/v1/models/%ff');
    expect(inference.status).toBe(400);
    expect(inference.body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    expect(inference.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('answers /api without a trailing slash in the management family', async () => {
    const res = await http(gw.baseUrl, 'GET', '/api');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ success: false, message: expect.any(String) });
  });

  it('answers malformed JSON and oversize bodies on /v1 in the OpenAI format', async () => {
    const bad = await http(gw.baseUrl, 'POST', '/v1/chat/completions', { rawBody: '{"model":', auth: 'Bearer sk-x' });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(bad.body.error).toEqual(expect.objectContaining({ message: expect.any(String), type: expect.any(String), code: expect.any(String) }));
    const small = await startGateway({ bodyLimitBytes: 1024 });
    try {
      const big = await http(small.baseUrl, 'POST', '/v1/chat/completions', { body: { model: 'x', messages: 'y'.repeat(4096) } });
      expect(big.status).toBe(413);
      expect(big.body.error).toEqual({ message: 'The request body is too large', type: 'invalid_request_error', param: null, code: 'payload_too_large' });
      expect(big.headers.get('x-request-id')).toMatch(/^req_/);
    } finally {
      await small.close();
    }
  });

  it('refuses a JSON body with a huge array or deep nesting before parsing it: 400 naming the limit, in each family', async () => {
    const key = `sk-${(await createKey({ name: 'shape', unlimited_quota: true })).key}`;
    // A million messages (3 MB, under the byte limit), sent while a health check waits behind it.
    const million = `{"model":"gpt-4o-mini","messages":[${'{},'.repeat(999_999)}{}]}`;
    const [big, health] = await Promise.all([
      http(gw.baseUrl, 'POST', '/v1/chat/completions', { rawBody: million, auth: `Bearer ${key}` }),
      http(gw.baseUrl, 'GET', '/healthz'),
    ]);
    expect(big.status).toBe(400);
    expect(big.body.error).toMatchObject({ type: 'invalid_request_error', message: 'An array in the request body has more than 10000 elements (GATEWAY_JSON_MAX_ARRAY_LENGTH)' });
    expect(health.status).toBe(200);

    const deep = (field: string) => `"${field}":${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const depthMessage = 'The request body nests arrays and objects more than 64 levels deep (GATEWAY_JSON_MAX_DEPTH)';
    const chat = await http(gw.baseUrl, 'POST', '/v1/chat/completions', {
      rawBody: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],${deep('vendor_extra')}}`,
      auth: `Bearer ${key}`,
    });
    expect(chat.status).toBe(400);
    expect(chat.body.error.message).toBe(depthMessage);
    const messages = await http(gw.baseUrl, 'POST', '/v1/messages', {
      rawBody: `{"model":"claude-sonnet-4","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"t","input_schema":{${deep('x')}}}]}`,
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    });
    expect(messages.status).toBe(400);
    expect(messages.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: depthMessage } });
    const management = await http(gw.baseUrl, 'POST', '/api/token/', { rawBody: `{"name":"n",${deep('x')}}`, auth: acct.systemToken });
    expect(management.status).toBe(400);
    expect(management.body).toEqual({ success: false, message: depthMessage });

    // Within the limits (brackets inside strings do not count), the request is served.
    const ok = await http(gw.baseUrl, 'POST', '/v1/chat/completions', {
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: '['.repeat(5000) }], vendor_extra: JSON.parse(`${'['.repeat(60)}${']'.repeat(60)}`) },
      auth: `Bearer ${key}`,
    });
    expect(ok.status).toBe(200);
  });

  it('sends nosniff, no-referrer and no-store (streams no-cache) on every kind of answer', async () => {
    const key = `sk-${(await createKey({ name: 'headers', unlimited_quota: true })).key}`;
    const check = (headers: Headers, cache = 'no-store') => {
      expect(headers.get('x-content-type-options')).toBe('nosniff');
      expect(headers.get('referrer-policy')).toBe('no-referrer');
      expect(headers.get('cache-control')).toBe(cache);
    };
    check((await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` })).headers);
    check((await http(gw.baseUrl, 'GET', '/v1/models')).headers); // a 401 too
    const created = await http(gw.baseUrl, 'POST', '/api/token/', { auth: acct.systemToken, body: { name: 'k2' } });
    check(created.headers); // carries a key
    check((await http(gw.baseUrl, 'GET', `/api/token/${created.body.data.id}`, { auth: acct.systemToken })).headers);
    const stream = await fetch(`${gw.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    await stream.text();
    check(stream.headers, 'no-cache');
    const page = await fetch(`${gw.baseUrl}/console`);
    await page.text();
    if (page.status === 200) check(page.headers);
  });

  it('TRUST_PROXY: the console cookie is Secure only when a trusted proxy forwarded https', async () => {
    const signIn = (base: string, token: string, headers: Record<string, string> = {}) =>
      fetch(`${base}/console/session`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ token }) });
    // No proxy trusted (the default): the header is anyone's to send, and ignored.
    const untrusted = await signIn(gw.baseUrl, acct.systemToken, { 'x-forwarded-proto': 'https' });
    expect(untrusted.status).toBe(200);
    expect(untrusted.headers.get('set-cookie')).not.toMatch(/;\s*Secure/i);
    const behind = await startGateway({ trustProxy: ['127.0.0.1', '::1'] });
    try {
      const other = await newAccount(behind.db);
      const viaProxy = await signIn(behind.baseUrl, other.systemToken, { 'x-forwarded-proto': 'https' });
      expect(viaProxy.status).toBe(200);
      expect(viaProxy.headers.get('set-cookie')).toMatch(/;\s*Secure/i);
      const plainHttp = await signIn(behind.baseUrl, other.systemToken);
      expect(plainHttp.headers.get('set-cookie')).not.toMatch(/;\s*Secure/i);
    } finally {
      await behind.close();
    }
  });

  it('uses x-api-key when Authorization is present but empty', async () => {
    const key = await createKey({ name: 'xak', unlimited_quota: true });
    const res = await http(gw.baseUrl, 'GET', '/v1/models', { auth: '', headers: { 'x-api-key': `sk-${key.key}` } });
    expect(res.status).toBe(200);
  });

  it('never reserves quota on a key disabled after it was authenticated', async () => {
    const key = await createKey({ name: 'late-disable', remain_quota: 1000 });
    await gw.deps.keyAuth.authenticate(`sk-${key.key}`);
    await gw.deps.tokens.setStatus(acct.id, key.id, 2);
    await expect(
      reserve(createHoldRepository(gw.db), { businessKey: `r-${randomUUID()}`, tokenId: key.id, accountId: acct.id, amount: 10, reason: 'test', ttlSeconds: 60 }),
    ).rejects.toBeInstanceOf(InvalidApiKeyError);
    const { rows } = await gw.db.query('SELECT remain_quota FROM tokens WHERE id = $1', [key.id]);
    expect(rows[0].remain_quota).toBe(1000);
  });

  it('settling or releasing a hold while its key is deleted never deadlocks', async () => {
    const failures: string[] = [];
    for (let round = 0; round < 30; round++) {
      const key = await createKey({ name: `race-${round}`, remain_quota: 1000 });
      const businessKey = `race-${randomUUID()}`;
      await reserve(createHoldRepository(gw.db), { businessKey, tokenId: key.id, accountId: acct.id, amount: 100, reason: 'test', ttlSeconds: 60 });
      const finish =
        round % 2 === 0
          ? settle(createHoldRepository(gw.db), businessKey, { actualAmount: 60, requestId: businessKey, model: 'gpt-4o', tokenName: 'race' })
          : release(createHoldRepository(gw.db), businessKey);
      const results = await Promise.allSettled([finish, gw.deps.tokens.remove(acct.id, key.id)]);
      for (const r of results) if (r.status === 'rejected') failures.push(String((r.reason as Error).message));
    }
    expect(failures).toEqual([]);
  });
});
