// test modes: postgres, embedded
import { randomUUID } from 'node:crypto';
import { reserve, settle } from '../../src/domain/billing/holds';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MODEL_CREATED } from '../../src/domain/catalog';
import type { GatewayConfigFileInput } from '../../src/gateway-config';
import { ConfigStore } from '../../src/gateway-config';
import { http, mutableConfigStore, newAccount, startGateway, TestGateway } from '../helpers/harness';
import { createHoldRepository } from '../../src/db/repositories/holds';

/**
 * API-key authentication on inference routes, GET /v1/models (+ retrieve) over the gateway config with group
 * and allowlist visibility, and the OpenAI-compatible balance endpoints, over real HTTP on the real database.
 */
describe('inference: API keys, /v1/models and balance', () => {
  let gw: TestGateway;
  // This gateway's own config: the tests add channels (each in a group of its own) and reload it.
  const config: Required<Pick<GatewayConfigFileInput, 'channels' | 'models'>> = {
    channels: [{ name: 'base', type: 'openai', base_url: 'https://upstream.invalid', models: ['gpt-4o'] }],
    models: { 'gpt-4o': { input_per_1m: 1, output_per_1m: 2 } },
  };
  const configStore = mutableConfigStore(config);
  beforeAll(async () => {
    gw = await startGateway({ config: configStore.store });
  });
  afterAll(async () => {
    await gw.close();
  });

  const now = () => Math.floor(Date.now() / 1000);
  const uniq = () => randomUUID().slice(0, 8);

  /** A channel in the tests' own groups; `ownedBy` prices its models with that owner. Reloads the config. */
  function addChannel(models: string[], groups: string[], opts: { ownedBy?: string; enabled?: boolean } = {}) {
    const name = `test-${uniq()}`;
    config.channels.push({ name, type: 'openai', base_url: 'https://upstream.invalid', models, groups, enabled: opts.enabled ?? true });
    if (opts.ownedBy) {
      for (const m of models) config.models[m] ??= { input_per_1m: 1, output_per_1m: 1, owned_by: opts.ownedBy };
    }
    configStore.set(config);
    return name;
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
        // x-api-key is how Anthropic's clients authenticate: they get the Anthropic list shape.
        if (headers['x-api-key']) expect(res.body).toMatchObject({ data: expect.any(Array), has_more: false });
        else expect(res.body.object).toBe('list');
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
    it('lists the models of the config\'s channels in the key group, sorted and unique, in the OpenAI shape', async () => {
      const group = `g_${uniq()}`;
      addChannel(['m-alpha'], [group], { ownedBy: 'prov-1' });
      addChannel(['m-zeta', 'm-alpha'], [group]);
      addChannel(['m-alpha', 'm-beta'], [group, `other_${uniq()}`], { ownedBy: 'prov-2' });
      addChannel(['m-hidden'], [`other_${uniq()}`]);
      addChannel(['m-disabled'], [group], { enabled: false });
      const { key } = await newKey({ group });
      const res = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${key}` });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      // owned_by: the model's own setting in the config, else the type of the channel serving it.
      expect(res.body).toEqual({
        object: 'list',
        data: [
          { id: 'm-alpha', object: 'model', created: MODEL_CREATED, owned_by: 'prov-1' },
          { id: 'm-beta', object: 'model', created: MODEL_CREATED, owned_by: 'prov-2' },
          { id: 'm-zeta', object: 'model', created: MODEL_CREATED, owned_by: 'openai' },
        ],
      });
    });

    it('narrows by the key allowlist and answers an empty catalog with an empty list', async () => {
      const group = `g_${uniq()}`;
      addChannel(['a-1', 'a-2', 'a-3'], [group]);
      const limited = await newKey({ group, models: 'a-3, a-1,not-in-catalog' });
      const res = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${limited.key}` });
      expect(res.body.data.map((m: { id: string }) => m.id)).toEqual(['a-1', 'a-3']);

      const nothing = await newKey({ group: `empty_${uniq()}` });
      const empty = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${nothing.key}` });
      expect(empty.status).toBe(200);
      expect(empty.body).toEqual({ object: 'list', data: [] });
    });

    it("reads group '' as 'default'", async () => {
      const expected = [...new Set(config.channels.filter((c) => c.enabled !== false && (c.groups ?? ['default']).includes('default')).flatMap((c) => c.models))].sort();
      const blank = await newKey({ group: '' });
      const named = await newKey({ group: 'default' });
      const a = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${blank.key}` });
      const b = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${named.key}` });
      expect(a.body).toEqual(b.body);
      expect(a.body.data.map((m: { id: string }) => m.id)).toEqual(expected);
    });

    it('follows the config file at once when it is reloaded (SIGHUP), and keeps it when the new file is bad', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'gateway-models-'));
      const file = path.join(dir, 'gateway.yaml');
      const write = (models: string, enabled = true) =>
        writeFileSync(
          file,
          `channels:\n  - {name: up, type: openai, base_url: 'https://upstream.invalid', models: [${models}], enabled: ${enabled}}\n` +
            `models:\n  t-1: {input_per_1m: 1}\n  t-2: {input_per_1m: 1, owned_by: t-owner}\n`,
        );
      write('t-1');
      const store = ConfigStore.fromFile(file);
      const own = await startGateway({ config: store });
      try {
        // Its own key: in the embedded project every gateway has a database of its own.
        const acct = await newAccount(own.db);
        const key = `sk-${(await own.deps.tokens.create(acct.id, { remain_quota: 1000 })).key}`;
        const ids = async () =>
          (await http(own.baseUrl, 'GET', '/v1/models', { auth: key })).body.data.map((m: { id: string; owned_by: string }) => `${m.id}:${m.owned_by}`);
        expect(await ids()).toEqual(['t-1:openai']);
        write('t-1', false);
        expect(store.reload().ok).toBe(true);
        expect(await ids()).toEqual([]);
        write('t-2');
        expect(store.reload().ok).toBe(true);
        expect(await ids()).toEqual(['t-2:t-owner']);
        writeFileSync(file, 'channels: [{name: broken}]\n');
        expect(store.reload().ok).toBe(false);
        expect(await ids()).toEqual(['t-2:t-owner']);
      } finally {
        await own.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('retrieves one visible model; an invisible or unknown one is 404 model_not_found', async () => {
      const group = `g_${uniq()}`;
      addChannel(['r-1', 'r-2'], [group], { ownedBy: 'prov-r' });
      const { key } = await newKey({ group, models: 'r-1' });
      const ok = await http(gw.baseUrl, 'GET', '/v1/models/r-1', { auth: `Bearer ${key}` });
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ id: 'r-1', object: 'model', created: MODEL_CREATED, owned_by: 'prov-r' });
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
      addChannel(['org/model-x'], [group]);
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
      const held = await reserve(createHoldRepository(gw.db), {
        businessKey: `test:${uniq()}`, accountId: record.user_id, tokenId: record.id, amount: 400_000, reason: 'test', ttlSeconds: 60,
      });
      const during = await http(gw.baseUrl, 'GET', '/v1/dashboard/billing/subscription', { auth: key });
      expect(during.body.hard_limit_usd).toBe(2.5);
      await settle(createHoldRepository(gw.db), held.businessKey, { requestId: `req_${uniq()}${uniq()}`, model: 'gpt-4o', actualAmount: 100_000 });
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
