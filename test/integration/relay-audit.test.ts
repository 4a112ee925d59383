// test modes: postgres, embedded
import { TINY_PNG } from '../../src/simulator';
import { startSimulator, type Simulator } from '../../src/simulator';
import type { GatewayConfigFileInput } from '../../src/gateway-config/schema';
import { http, mutableConfigStore, newAccount, startGateway, type TestGateway } from '../helpers/harness';
import { miniCredits, PRICES, RELAY_MODELS } from '../helpers/relay-fixture';

/**
 * Issue 7 items the other relay tests left unproven: the allowlist and the system token on every inference
 * endpoint (nothing charged, the family's format), a config reload while a call is in flight, anthropic-beta
 * forwarded.
 */
describe('relay: issue 7 audit', () => {
  let sim: Simulator;
  let gw: TestGateway;
  let config: GatewayConfigFileInput;
  let store: ReturnType<typeof mutableConfigStore>;

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'key-up' });
    config = {
      channels: [
        { name: 'main', type: 'openai', base_url: `${sim.url}/v1`, key: 'key-up', models: RELAY_MODELS },
        { name: 'claude', type: 'anthropic', base_url: `${sim.url}/v1`, key: 'key-up', models: ['claude-sonnet-4'] },
      ],
      models: { ...PRICES, 'claude-sonnet-4': { input_per_1m: '3', output_per_1m: '15' } },
    };
    store = mutableConfigStore(config);
    gw = await startGateway({ config: store.store });
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
  });

  async function newKey(settings: Record<string, unknown> = {}) {
    const acct = await newAccount(gw.db);
    const record = await gw.deps.tokens.create(acct.id, { remain_quota: 10_000_000, ...settings });
    return { acct, id: record.id, key: `sk-${record.key}` };
  }
  async function charged(tokenId: number) {
    const t = await gw.db.query('SELECT remain_quota, used_quota FROM tokens WHERE id = $1', [tokenId]);
    const l = await gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE token_id = $1', [tokenId]);
    const h = await gw.db.query('SELECT count(*)::int AS n FROM quota_holds WHERE token_id = $1', [tokenId]);
    return { remain: Number(t.rows[0].remain_quota), used: Number(t.rows[0].used_quota), ledger: l.rows[0].n, holds: h.rows[0].n };
  }
  const untouched = { remain: 10_000_000, used: 0, ledger: 0, holds: 0 };

  function editForm(model: string) {
    const form = new FormData();
    form.set('model', model);
    form.set('prompt', 'x');
    form.set('image', new Blob([TINY_PNG], { type: 'image/png' }), 'in.png');
    return form;
  }

  it('a model outside the allowlist: 403 on every inference endpoint, in the family format, nothing charged, nothing sent upstream', async () => {
    const k = await newKey({ models: 'o3-mini' });
    sim.resetRecords();
    const openai = [
      ['/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }],
      ['/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: true }],
      ['/v1/embeddings', { model: 'text-embedding-3-small', input: 'x' }],
      ['/v1/images/generations', { model: 'dall-e-3', prompt: 'x' }],
    ] as const;
    for (const [path, body] of openai) {
      const r = await http(gw.baseUrl, 'POST', path, { auth: `Bearer ${k.key}`, body });
      expect([path, r.status]).toEqual([path, 403]);
      expect(r.body.error).toMatchObject({ type: 'permission_error' });
      expect(r.body.error.message).toMatch(/not authorized.*(gpt-4o-mini|text-embedding-3-small|dall-e-3)/);
      expect(r.headers.get('x-request-id')).toMatch(/^req_/);
    }
    const edit = await fetch(`${gw.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${k.key}` }, body: editForm('dall-e-3') });
    expect(edit.status).toBe(403);
    expect(((await edit.json()) as { error: { message: string } }).error.message).toMatch(/not authorized.*dall-e-3/);
    const messages = await http(gw.baseUrl, 'POST', '/v1/messages', {
      headers: { 'x-api-key': k.key },
      body: { model: 'claude-sonnet-4', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] },
    });
    expect(messages.status).toBe(403);
    expect(messages.body).toEqual({ type: 'error', error: { type: 'permission_error', message: expect.stringMatching(/not authorized.*claude-sonnet-4/) } });
    expect(await charged(k.id)).toEqual(untouched);
    expect(sim.requests).toEqual([]);
  });

  it('a system token is 401 invalid_api_key on every API-key endpoint, in the family format', async () => {
    const k = await newKey();
    const sys = k.acct.systemToken;
    for (const [method, path] of [
      ['GET', '/v1/models'],
      ['GET', '/v1/models/gpt-4o-mini'],
      ['GET', '/v1/dashboard/billing/subscription'],
      ['GET', '/dashboard/billing/usage'],
      ['POST', '/v1/chat/completions'],
      ['POST', '/v1/embeddings'],
      ['POST', '/v1/images/generations'],
    ] as const) {
      const r = await http(gw.baseUrl, method, path, { auth: sys, body: method === 'POST' ? { model: 'gpt-4o-mini' } : undefined });
      expect([path, r.status]).toEqual([path, 401]);
      expect(r.body.error).toMatchObject({ code: 'invalid_api_key', type: 'invalid_request_error' });
    }
    const edit = await fetch(`${gw.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: sys }, body: editForm('dall-e-3') });
    expect(edit.status).toBe(401);
    expect(((await edit.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    for (const headers of [{ 'x-api-key': sys }, { authorization: `Bearer ${sys}` }] as Array<Record<string, string>>) {
      const r = await http(gw.baseUrl, 'POST', '/v1/messages', { headers, body: { model: 'claude-sonnet-4', max_tokens: 5, messages: [] } });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ type: 'error', error: { type: 'authentication_error', message: expect.any(String) } });
    }
  });

  it('a reload while a call is in flight: the call completes at the prices it started with; the next call sees the new config', async () => {
    const k = await newKey();
    sim.setOptions({ latencyMs: 400 });
    sim.resetRecords();
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'reload while in flight' }], max_tokens: 10 };
    const inFlight = http(gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${k.key}`, body });
    // Reload only once the upstream has the call, so it is really in flight.
    for (let i = 0; i < 200 && sim.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(sim.requests).toHaveLength(1);
    const prices = { ...(config.models as Record<string, unknown>) };
    store.set({ ...config, models: { ...prices, 'gpt-4o-mini': { input_per_1m: '1.5', output_per_1m: '6' } } });
    try {
      const r = await inFlight;
      expect(r.status).toBe(200);
      const { prompt_tokens: p, completion_tokens: c } = r.body.usage;
      const rows = await gw.db.query('SELECT quota FROM ledger WHERE request_id = $1', [r.headers.get('x-request-id')]);
      expect(rows.rows.map((x) => Number(x.quota))).toEqual([miniCredits(p, c)]);

      sim.setOptions({ latencyMs: 0 });
      const next = await http(gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${k.key}`, body });
      expect(next.status).toBe(200);
      const u = next.body.usage;
      const nextRows = await gw.db.query('SELECT quota FROM ledger WHERE request_id = $1', [next.headers.get('x-request-id')]);
      // Ten times the price: ceil(10 × (15p + 60c) / 200).
      expect(nextRows.rows.map((x) => Number(x.quota))).toEqual([Math.ceil((10 * (15 * u.prompt_tokens + 60 * u.completion_tokens)) / 200)]);
    } finally {
      sim.setOptions({ latencyMs: 0 });
      store.set(config);
    }
  });

  it('model_mapping: the upstream gets its own model id; the client, /v1/models and the ledger keep ours', async () => {
    const k = await newKey();
    const mapped = {
      ...config,
      channels: [{ name: 'mapped', type: 'openai' as const, base_url: `${sim.url}/v1`, key: 'key-up', models: ['gpt-4o-mini'], model_mapping: { 'gpt-4o-mini': 'gpt-4o-mini-2024-07-18' } }],
    };
    store.set(mapped);
    try {
      sim.resetRecords();
      const r = await http(gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${k.key}`, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] } });
      expect(r.status).toBe(200);
      expect((sim.requests[0].body as { model: string }).model).toBe('gpt-4o-mini-2024-07-18');
      const rows = await gw.db.query('SELECT model, channel FROM ledger WHERE request_id = $1', [r.headers.get('x-request-id')]);
      expect(rows.rows).toEqual([{ model: 'gpt-4o-mini', channel: 'mapped' }]);
      const models = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${k.key}` });
      expect(models.body.data.map((m: { id: string }) => m.id)).toEqual(['gpt-4o-mini']);
    } finally {
      store.set(config);
    }
  });

  it('a streamed chat on a Claude model (translated) carries a usage chunk only when the client asks for it, and is billed either way', async () => {
    const k = await newKey();
    async function stream(extra: Record<string, unknown>) {
      const res = await fetch(`${gw.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-sonnet-4', messages: [{ role: 'user', content: 'Tell me a story' }], stream: true, ...extra }),
      });
      expect(res.status).toBe(200);
      const lines = (await res.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
      expect(lines[lines.length - 1]).toBe('[DONE]');
      const chunks = lines.slice(0, -1).map((l) => JSON.parse(l) as { usage?: unknown; choices: Array<{ finish_reason: string | null }> });
      const rows = await gw.db.query('SELECT is_stream FROM ledger WHERE request_id = $1', [res.headers.get('x-request-id')]);
      expect(rows.rows).toEqual([{ is_stream: true }]);
      return chunks;
    }
    for (const extra of [{}, { stream_options: { include_usage: false } }]) {
      const chunks = await stream(extra);
      expect(chunks.filter((c) => c.usage)).toEqual([]);
      expect(chunks.every((c) => c.choices.length === 1)).toBe(true);
    }
    const asked = await stream({ stream_options: { include_usage: true } });
    expect(asked.filter((c) => c.usage)).toHaveLength(1);
    expect(asked[asked.length - 1].usage).toBeDefined();
    expect(asked[asked.length - 1].choices).toEqual([]);
  });

  it('/v1/messages forwards anthropic-beta and X-Vendor-Version (over anthropic-version) upstream', async () => {
    const k = await newKey();
    sim.resetRecords();
    const r = await http(gw.baseUrl, 'POST', '/v1/messages', {
      headers: { 'x-api-key': k.key, 'anthropic-beta': 'tools-2024-04-04', 'x-vendor-version': '2024-10-22', 'anthropic-version': '2023-06-01' },
      body: { model: 'claude-sonnet-4', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] },
    });
    expect(r.status).toBe(200);
    const seen = sim.requests.filter((x) => x.path === '/v1/messages');
    expect(seen).toHaveLength(1);
    expect(seen[0].headers['anthropic-beta']).toBe('tools-2024-04-04');
    expect(seen[0].headers['anthropic-version']).toBe('2024-10-22');
    expect(seen[0].headers['x-api-key']).toBe('key-up');
  });
});
