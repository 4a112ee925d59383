// test modes: postgres, embedded
import Anthropic from '@anthropic-ai/sdk';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startGateway, testGatewayConfig, type TestGateway } from '../helpers/harness';
import { ledgerOf, newKey } from '../helpers/relay-fixture';

/**
 * AWS Bedrock as a channel type (`bedrock`) for Anthropic's models: InvokeModel with the Messages body, streamed as
 * an AWS event stream, every request signed with Signature V4 (which the simulator verifies again) or carrying a
 * Bedrock API key; billed by dimension; a wrong secret fails over.
 */
describe('bedrock channels', () => {
  const AWS = { accessKeyId: 'AKIASIMULATOR0000001', secretAccessKey: 'sim-secret-access-key-0123456789abcdef' };
  const PROFILE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
  let sim: Simulator;
  let gw: TestGateway;

  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'unused', bedrock: { ...AWS, apiKey: 'bedrock-api-key-123' } });
    const aws = (secret: string) => ({ access_key_id: AWS.accessKeyId, secret_access_key: secret });
    const bedrock = (name: string, models: string[], extra: Record<string, unknown>) => ({ name, type: 'bedrock' as const, region: 'us-east-1', base_url: sim.url, models, ...extra });
    const config = testGatewayConfig({
      channels: [
        bedrock('bedrock-signed', ['claude-sonnet-4-5'], { aws: aws(AWS.secretAccessKey), model_mapping: { 'claude-sonnet-4-5': PROFILE } }),
        bedrock('bedrock-wrong-secret', ['claude-haiku-4-5'], { aws: aws('not-the-secret-access-key-000000'), priority: 10 }),
        bedrock('bedrock-api-key', ['claude-haiku-4-5'], { key: 'bedrock-api-key-123' }),
      ],
      models: Object.fromEntries(['claude-sonnet-4-5', 'claude-haiku-4-5'].map((m) => [m, { input_per_1m: 2, output_per_1m: 8 }])),
    });
    gw = await startGateway({ config: ConfigStore.fixed(config) });
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
  });

  const credits = (prompt: number, completion: number) => prompt + 4 * completion;
  const lastInvoke = () => [...sim.requests].reverse().find((r) => r.url.startsWith('/model/'))!;

  it('Claude through the Anthropic SDK: InvokeModel signed with SigV4, the inference profile from model_mapping, billed', async () => {
    const { key, record } = await newKey(gw);
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    const m = await anthropic.messages.create(
      { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hello bedrock' }] },
      { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } },
    );
    expect(m.content[0]).toMatchObject({ type: 'text' });
    const sent = lastInvoke();
    expect(sent.url).toBe(`/model/${encodeURIComponent(PROFILE)}/invoke`);
    expect(String(sent.headers.authorization)).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${AWS.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request`));

    const stream = anthropic.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'stream from bedrock' }] });
    let text = '';
    stream.on('text', (t) => (text += t));
    const final = await stream.finalMessage();
    expect(text.length).toBeGreaterThan(0);
    expect(lastInvoke().url).toBe(`/model/${encodeURIComponent(PROFILE)}/invoke-with-response-stream`);

    const tools = await anthropic.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'any' },
    });
    expect(tools.content.some((b) => b.type === 'tool_use')).toBe(true);

    // Token counting is not a Bedrock call: counted by the gateway, unbilled.
    const count = await anthropic.messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'count me' }] });
    expect(count.input_tokens).toBeGreaterThan(0);

    const rows = await ledgerOf(gw, record.id);
    expect(rows.map((r) => r.quota)).toEqual([credits(m.usage.input_tokens, m.usage.output_tokens), credits(final.usage.input_tokens, final.usage.output_tokens), credits(tools.usage.input_tokens, tools.usage.output_tokens)]);
  });

  it('chat completions reach Claude on Bedrock too, plain and streamed', async () => {
    const { client } = await newKey(gw);
    const r = await client.chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'as chat' }] });
    expect(r.choices[0].message.content).toEqual(expect.any(String));
    let text = '';
    for await (const chunk of await client.chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'as chat stream' }], stream: true })) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  it('a wrong secret is refused by the signature check and fails over to a channel with a Bedrock API key', async () => {
    const { client, record } = await newKey(gw);
    const r = await client.chat.completions.create({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'failover' }] });
    expect(r.choices[0].message.content).toEqual(expect.any(String));
    expect(lastInvoke().headers.authorization).toBe('Bearer bedrock-api-key-123');
    expect((await ledgerOf(gw, record.id)).length).toBe(1);
    expect(gw.logs.text()).not.toContain(AWS.secretAccessKey);
    expect(gw.logs.text()).not.toContain('Signature=');
  });

  it('the simulator checks what Bedrock checks: a right signature passes, a changed body, a stale date and a wrong secret do not', async () => {
    const url = new URL(`${sim.url}/model/${encodeURIComponent(PROFILE)}/invoke`);
    const body = JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] });
    const send = async (opts: { secret?: string; date?: Date; sentBody?: string }) => {
      const signer = new SignatureV4({ service: 'bedrock', region: 'us-east-1', credentials: { accessKeyId: AWS.accessKeyId, secretAccessKey: opts.secret ?? AWS.secretAccessKey }, sha256: Hash.bind(null, 'sha256') });
      const signed = await signer.sign(
        { method: 'POST', protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: url.pathname, query: {}, headers: { host: url.host, 'content-type': 'application/json' }, body },
        { signingDate: opts.date ?? new Date() },
      );
      const res = await fetch(url, { method: 'POST', headers: signed.headers as Record<string, string>, body: opts.sentBody ?? body });
      return { status: res.status, type: res.headers.get('x-amzn-errortype') };
    };
    expect((await send({})).status).toBe(200);
    expect(await send({ sentBody: body.replace('"x"', '"y"') })).toEqual({ status: 403, type: expect.stringMatching(/^InvalidSignatureException/) });
    expect(await send({ date: new Date(Date.now() - 10 * 60_000) })).toEqual({ status: 403, type: expect.stringMatching(/^InvalidSignatureException/) });
    expect(await send({ secret: 'wrong' })).toEqual({ status: 403, type: expect.stringMatching(/^InvalidSignatureException/) });
  });
});
