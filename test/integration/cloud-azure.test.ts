// test modes: postgres, embedded
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startGateway, testGatewayConfig, type TestGateway } from '../helpers/harness';
import { ledgerOf, newKey } from '../helpers/relay-fixture';

/** 1,000 on PostgreSQL; fewer on the embedded database (one session), whose suite time they would double. */
const CONCURRENT = process.env.GATEWAY_TEST_DB_MODE === 'embedded' ? 200 : 1000;

/**
 * Azure OpenAI as a channel type (`azure`): the official clients reach deployments through the gateway on both
 * path styles, with `api-key` or Entra ID tokens the simulator issues and checks; usage is billed by dimension; a
 * channel whose credentials are refused fails over and cools down; many calls on a cold channel mint one token.
 */
describe('azure channels', () => {
  const AD = { tenantId: 'contoso-tenant', clientId: 'gateway-app', clientSecret: 'right-secret-0123456789' };
  let sim: Simulator;
  let gw: TestGateway;

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'azure-resource-key', azureAd: AD });
    const ad = (secret: string) => ({ tenant_id: AD.tenantId, client_id: AD.clientId, client_secret: secret, authority_host: sim.url });
    const config = testGatewayConfig({
      channels: [
        { name: 'azure-key', type: 'azure', base_url: sim.url, key: 'azure-resource-key', api_version: '2024-10-21', models: ['gpt-4.1', 'text-embedding-3-small'], model_mapping: { 'gpt-4.1': 'prod-gpt41' } },
        { name: 'azure-entra', type: 'azure', base_url: sim.url, azure_ad: ad(AD.clientSecret), models: ['gpt-4.1-mini'], responses_api: true },
        // The same model twice: the first channel's secret is wrong, the second's right.
        { name: 'azure-wrong-secret', type: 'azure', base_url: sim.url, azure_ad: ad('bad-secret-value-4711'), models: ['gpt-4o'], priority: 10 },
        { name: 'azure-wrong-key', type: 'azure', base_url: sim.url, key: 'not-the-key', api_version: 'v1', models: ['gpt-4o'], priority: 5 },
        { name: 'azure-fallback', type: 'azure', base_url: sim.url, azure_ad: ad(AD.clientSecret), models: ['gpt-4o'] },
        { name: 'azure-cold', type: 'azure', base_url: sim.url, azure_ad: ad(AD.clientSecret), models: ['gpt-4o-mini'] },
      ],
      models: {
        'gpt-4.1': { input_per_1m: 2, output_per_1m: 8 },
        'gpt-4.1-mini': { input_per_1m: 2, output_per_1m: 8 },
        'gpt-4o': { input_per_1m: 2, output_per_1m: 8 },
        'gpt-4o-mini': { input_per_1m: 2, output_per_1m: 8 },
        'text-embedding-3-small': { input_per_1m: 2 },
      },
    });
    gw = await startGateway({ config: ConfigStore.fixed(config) });
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
  });

  /** Credits of a call at 2 / 8 USD per 1M tokens: exact, since 500,000 credits are one dollar. */
  const credits = (prompt: number, completion: number) => prompt + 4 * completion;
  const lastTo = (prefix: string) => [...sim.requests].reverse().find((r) => r.url.startsWith(prefix))!;

  it('chat on a deployment path with api-key: plain, streamed and with tools, billed by dimension', async () => {
    const { client, record } = await newKey(gw);
    const plain = await client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'hello azure' }] });
    expect(plain.choices[0].message.content).toEqual(expect.any(String));
    const sent = lastTo('/openai/deployments/');
    expect(sent.url).toBe('/openai/deployments/prod-gpt41/chat/completions?api-version=2024-10-21');
    expect(sent.headers['api-key']).toBe('azure-resource-key');
    expect(sent.headers.authorization).toBeUndefined();

    const stream = await client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'stream it' }], stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | undefined;
    let text = '';
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);

    const tools = await client.chat.completions.create({
      model: 'gpt-4.1',
      messages: [{ role: 'user', content: 'what is the weather in Paris?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      tool_choice: 'required',
    });
    expect(tools.choices[0].message.tool_calls?.[0]).toMatchObject({ type: 'function', function: { name: 'get_weather' } });

    const rows = await ledgerOf(gw, record.id);
    expect(rows.map((r) => r.quota)).toEqual([
      credits(plain.usage!.prompt_tokens, plain.usage!.completion_tokens),
      credits(usage!.prompt_tokens, usage!.completion_tokens),
      credits(tools.usage!.prompt_tokens, tools.usage!.completion_tokens),
    ]);
  });

  it('embeddings on a deployment path', async () => {
    const { client, record } = await newKey(gw);
    const e = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
    expect(e.data).toHaveLength(2);
    expect(lastTo('/openai/deployments/').url).toBe('/openai/deployments/text-embedding-3-small/embeddings?api-version=2024-10-21');
    expect((await ledgerOf(gw, record.id)).map((r) => r.quota)).toEqual([Math.ceil(e.usage.prompt_tokens)]);
  });

  it('the v1 API with an Entra ID token: chat, Responses natively, Messages and the Gemini API translated', async () => {
    const { client, key, record } = await newKey(gw);
    const chat = await client.chat.completions.create({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.choices[0].message.content).toEqual(expect.any(String));
    const sent = lastTo('/openai/v1/');
    expect(sent.url).toBe('/openai/v1/chat/completions');
    expect(sent.headers.authorization).toMatch(/^Bearer sim-entra-/);
    expect((sent.body as { model: string }).model).toBe('gpt-4.1-mini');

    const response = await client.responses.create({ model: 'gpt-4.1-mini', input: 'a response' });
    expect(response.output_text).toEqual(expect.any(String));
    expect(lastTo('/openai/v1/').url).toBe('/openai/v1/responses');

    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'gpt-4.1-mini', max_tokens: 64, messages: [{ role: 'user', content: 'as messages' }] });
    expect(message.content[0]).toMatchObject({ type: 'text' });

    const gemini = await fetch(`${gw.baseUrl}/v1beta/models/gpt-4.1-mini:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'as gemini' }] }] }),
    });
    expect(gemini.status).toBe(200);
    expect((await ledgerOf(gw, record.id)).length).toBe(4);
  });

  it("Azure's content filter reaches the client as an OpenAI 400 content_filter, unbilled", async () => {
    const { client, record } = await newKey(gw);
    const err = await client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'sim:content_filter please' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('content_filter');
    expect(await ledgerOf(gw, record.id)).toEqual([]);
  });

  it('refused credentials (a wrong secret at the token endpoint, a wrong api-key) fail over, cool the channels down, and never blame the key', async () => {
    const { client, record } = await newKey(gw);
    const r = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'failover' }] });
    expect(r.choices[0].message.content).toEqual(expect.any(String));
    expect(lastTo('/openai/').headers.authorization).toMatch(/^Bearer sim-entra-/);
    expect((await ledgerOf(gw, record.id)).length).toBe(1);
    // Both refused channels were tried first and counted as failures of their own.
    const channels = await fetch(`${gw.baseUrl}/api/channel/`, { headers: { authorization: await adminToken() } }).then((x) => x.json());
    const byName = Object.fromEntries((channels.data as Array<{ name: string; consecutive_failures: number }>).map((c) => [c.name, c]));
    expect(byName['azure-wrong-secret'].consecutive_failures).toBeGreaterThanOrEqual(1);
    expect(byName['azure-wrong-key'].consecutive_failures).toBeGreaterThanOrEqual(1);
    expect(byName['azure-fallback'].consecutive_failures).toBe(0);
    // Nothing secret in what the client or the log saw.
    expect(gw.logs.text()).not.toContain('bad-secret-value-4711');
    expect(gw.logs.text()).not.toContain(AD.clientSecret);
    expect(gw.logs.text()).not.toContain('sim-entra-');
  });

  it('with every channel of a model refused, the client gets a 5xx-family answer, not an invalid key', async () => {
    const config = testGatewayConfig({
      channels: [{ name: 'only-bad', type: 'azure', base_url: sim.url, key: 'nope', models: ['gpt-4o'] }],
      models: { 'gpt-4o': { input_per_1m: 2, output_per_1m: 8 } },
    });
    const bad = await startGateway({ config: ConfigStore.fixed(config) });
    try {
      const { client, record } = await newKey(bad);
      const err = (await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(err.status).toBeGreaterThanOrEqual(500);
      expect(err.code).not.toBe('invalid_api_key');
      expect(await ledgerOf(bad, record.id)).toEqual([]);
    } finally {
      await bad.close();
    }
  });

  it(`${CONCURRENT.toLocaleString('en')} concurrent calls on a cold channel mint one token`, async () => {
    const { key } = await newKey(gw, { remain_quota: 100_000_000 });
    const before = sim.entra!.mints;
    const answers = await Promise.all(
      Array.from({ length: CONCURRENT }, () =>
        fetch(`${gw.baseUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'cold' }], max_tokens: 4 }),
        }).then((r) => r.status),
      ),
    );
    expect(answers.filter((s) => s !== 200)).toEqual([]);
    expect(sim.entra!.mints - before).toBe(1);
  }, 120_000);

  async function adminToken(): Promise<string> {
    const { newAccount } = await import('../helpers/harness');
    return (await newAccount(gw.db, { admin: true })).systemToken;
  }
});
