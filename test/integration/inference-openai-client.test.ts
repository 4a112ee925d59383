// test modes: postgres, embedded
import OpenAI, { AuthenticationError, NotFoundError } from 'openai';
import { randomUUID } from 'node:crypto';
import { newAccount, startGateway, TestGateway, testGatewayConfig } from '../helpers/harness';

/** The official `openai` npm client against the gateway over real HTTP. */
describe('inference: the openai npm client', () => {
  let gw: TestGateway;
  const group = `oa_${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    gw = await startGateway({
      config: testGatewayConfig({
        channels: [{ name: 'oa', type: 'openai', base_url: 'https://upstream.invalid', models: ['gpt-4o', 'gpt-4o-mini', 'text-embedding-3-small'], groups: [group] }],
        models: {},
      }),
    });
  });
  afterAll(async () => {
    await gw.close();
  });

  it('lists and retrieves the visible models; a disabled key throws AuthenticationError invalid_api_key', async () => {
    const acct = await newAccount(gw.db);
    const record = await gw.deps.tokens.create(acct.id, { group, models: 'gpt-4o,text-embedding-3-small', remain_quota: 1000 });
    const client = new OpenAI({ apiKey: `sk-${record.key}`, baseURL: `${gw.baseUrl}/v1`, maxRetries: 0 });

    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['gpt-4o', 'text-embedding-3-small']);
    for (const m of page.data) {
      expect(m).toEqual({ id: m.id, object: 'model', created: expect.any(Number), owned_by: 'openai' });
    }

    const { data, response } = await client.models.list().withResponse();
    expect(data.data).toHaveLength(2);
    expect(response.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);

    const one = await client.models.retrieve('gpt-4o');
    expect(one.id).toBe('gpt-4o');
    const notAllowed = await client.models.retrieve('gpt-4o-mini').catch((e: unknown) => e);
    expect(notAllowed).toBeInstanceOf(NotFoundError);
    expect((notAllowed as NotFoundError).code).toBe('model_not_found');

    await gw.deps.tokens.setStatus(acct.id, record.id, 2);
    const err = await client.models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    const auth = err as AuthenticationError;
    expect(auth.status).toBe(401);
    expect(auth.code).toBe('invalid_api_key');
    expect(auth.type).toBe('invalid_request_error');
    expect(auth.headers?.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(auth.requestID).toBeDefined();
  });
});
