// test modes: postgres, embedded
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startGateway, testGatewayConfig, type TestGateway } from '../helpers/harness';
import { ledgerOf, newKey } from '../helpers/relay-fixture';

/** 1,000 on PostgreSQL; fewer on the embedded database (one session), whose suite time they would double. */
const CONCURRENT = process.env.GATEWAY_TEST_DB_MODE === 'embedded' ? 200 : 1000;

/**
 * Google Vertex AI as a channel type (`vertex`): Gemini models at Google's publisher paths and Claude at
 * Anthropic's `rawPredict`, with OAuth tokens minted from a service-account key (a JWT the simulator verifies
 * against the account's public key, at the key's own `token_uri`); every front door reaches both; billing by
 * dimension; a key the token endpoint refuses fails over; many calls on a cold channel mint one token.
 */
describe('vertex channels', () => {
  const PROJECT = 'my-project-123';
  const EMAIL = 'gateway@my-project-123.iam.gserviceaccount.com';
  let sim: Simulator;
  let gw: TestGateway;
  let dir: string;
  let savedEnv: Record<string, string | undefined>;

  beforeAll(async () => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    sim = await startSimulator({ apiKey: 'unused', googleServiceAccount: { project: PROJECT, clientEmail: EMAIL, publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString() } });
    const saKey = (privateKey: typeof pair.privateKey) =>
      JSON.stringify({ type: 'service_account', project_id: PROJECT, private_key_id: 'k1', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), client_email: EMAIL, token_uri: `${sim.url}/token` });
    savedEnv = { GOOGLE_APPLICATION_CREDENTIALS: process.env.GOOGLE_APPLICATION_CREDENTIALS, GCE_METADATA_HOST: process.env.GCE_METADATA_HOST };
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.GCE_METADATA_HOST = new URL(sim.url).host;
    dir = await mkdtemp(path.join(os.tmpdir(), 'vertex-'));
    const file = path.join(dir, 'sa.json');
    await writeFile(file, saKey(pair.privateKey), { mode: 0o600 });
    const vertex = (name: string, models: string[], extra: Record<string, unknown>) => ({ name, type: 'vertex' as const, project: PROJECT, region: 'us-east5', base_url: sim.url, models, ...extra });
    const config = testGatewayConfig({
      channels: [
        vertex('vertex-file', ['gemini-2.5-pro', 'claude-sonnet-4-5', 'gemini-embedding-001', 'text-embedding-005'], { credentials_file: file }),
        // A key of another account (its signature does not verify) before a good one.
        vertex('vertex-wrong-key', ['gemini-2.5-flash'], { credentials: saKey(other.privateKey), priority: 10 }),
        vertex('vertex-inline', ['gemini-2.5-flash'], { credentials: saKey(pair.privateKey) }),
        vertex('vertex-cold', ['claude-haiku-4-5'], { credentials: saKey(pair.privateKey) }),
        // No credentials and no GOOGLE_APPLICATION_CREDENTIALS: the metadata server of the machine (GCE_METADATA_HOST).
        vertex('vertex-metadata', ['gemini-2.0-flash'], {}),
      ],
      models: {
        ...Object.fromEntries(['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-2.0-flash', 'claude-sonnet-4-5', 'claude-haiku-4-5'].map((m) => [m, { input_per_1m: 2, output_per_1m: 8 }])),
        'gemini-embedding-001': { input_per_1m: 2 },
        'text-embedding-005': { input_per_1m: 2 },
      },
    });
    gw = await startGateway({ config: ConfigStore.fixed(config) });
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
    for (const [k, v] of Object.entries(savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  const credits = (prompt: number, completion: number) => prompt + 4 * completion;
  const lastVertex = () => [...sim.requests].reverse().find((r) => r.url.startsWith('/v1/projects/'))!;

  it('Gemini on Vertex through the Google GenAI SDK: plain, streamed and with a function, billed by dimension', async () => {
    const { key, record } = await newKey(gw);
    const genai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gw.baseUrl, fetch: (url, init) => fetch(url, init) } });
    const plain = await genai.models.generateContent({ model: 'gemini-2.5-pro', contents: 'hello vertex' });
    expect(plain.text).toEqual(expect.any(String));
    const sent = lastVertex();
    expect(sent.url).toBe(`/v1/projects/${PROJECT}/locations/us-east5/publishers/google/models/gemini-2.5-pro:generateContent`);
    expect(sent.headers.authorization).toMatch(/^Bearer ya29\.sim-/);
    expect(sent.headers['x-goog-api-key']).toBeUndefined();

    let streamed = '';
    for await (const chunk of await genai.models.generateContentStream({ model: 'gemini-2.5-pro', contents: 'stream it' })) streamed += chunk.text ?? '';
    expect(streamed.length).toBeGreaterThan(0);
    expect(lastVertex().url).toContain(':streamGenerateContent?alt=sse');

    const tool = await genai.models.generateContent({
      model: 'gemini-2.5-pro',
      contents: 'weather in Paris?',
      config: { tools: [{ functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } } } }] }] },
    });
    expect(tool.candidates?.[0]).toBeDefined();

    const rows = await ledgerOf(gw, record.id);
    expect(rows).toHaveLength(3);
    expect(rows[0].quota).toBe(credits(plain.usageMetadata!.promptTokenCount!, plain.usageMetadata!.candidatesTokenCount! + (plain.usageMetadata!.thoughtsTokenCount ?? 0)));
  });

  it('Claude on Vertex through the Anthropic SDK: rawPredict and streamRawPredict with the Messages body, tools, billed', async () => {
    const { key, record } = await newKey(gw);
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    const m = await anthropic.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hello claude on vertex' }] });
    expect(m.content[0]).toMatchObject({ type: 'text' });
    const sent = lastVertex();
    expect(sent.url).toBe(`/v1/projects/${PROJECT}/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5:rawPredict`);
    expect(sent.headers.authorization).toMatch(/^Bearer ya29\.sim-/);

    const stream = anthropic.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'stream' }] });
    const final = await stream.finalMessage();
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(lastVertex().url).toContain(':streamRawPredict');

    const tools = await anthropic.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'any' },
    });
    expect(tools.content.some((b) => b.type === 'tool_use')).toBe(true);

    const count = await anthropic.messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'count me' }] });
    expect(count.input_tokens).toBeGreaterThan(0);
    expect(lastVertex().url).toContain('/publishers/anthropic/models/count-tokens:rawPredict');

    const rows = await ledgerOf(gw, record.id);
    expect(rows.map((r) => r.quota)).toEqual([credits(m.usage.input_tokens, m.usage.output_tokens), credits(final.usage.input_tokens, final.usage.output_tokens), credits(tools.usage.input_tokens, tools.usage.output_tokens)]);
  });

  it('the other front doors reach both publishers: chat completions for Claude and Gemini on Vertex', async () => {
    const { client } = await newKey(gw);
    for (const model of ['claude-sonnet-4-5', 'gemini-2.5-pro']) {
      const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content: `chat to ${model}` }] });
      expect(r.choices[0].message.content).toEqual(expect.any(String));
    }
  });

  it('embeddings through :predict, from the OpenAI and the Gemini clients, billed by the tokens Vertex counted', async () => {
    const { key, client, record } = await newKey(gw);
    const predicts = () => sim.requests.filter((r) => r.url.endsWith(':predict'));
    const before = predicts().length;
    // Gemini embedding models take one instance a call; the others take many.
    const gemini = await client.embeddings.create({ model: 'gemini-embedding-001', input: ['one text', 'another text', 'a third'], dimensions: 64, encoding_format: 'float' });
    expect(gemini.data.map((d) => d.embedding.length)).toEqual([64, 64, 64]);
    const sent = predicts().slice(before);
    expect(sent).toHaveLength(3);
    expect(sent[0].url).toBe(`/v1/projects/${PROJECT}/locations/us-east5/publishers/google/models/gemini-embedding-001:predict`);
    expect(sent.map((r) => r.body)).toEqual(expect.arrayContaining([{ instances: [{ content: 'one text' }], parameters: { autoTruncate: true, outputDimensionality: 64 } }]));

    const batch = await client.embeddings.create({ model: 'text-embedding-005', input: ['alpha', 'beta'], encoding_format: 'float' });
    expect(batch.data).toHaveLength(2);
    expect(predicts().length).toBe(before + 4);

    const genai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gw.baseUrl, fetch: (url, init) => fetch(url, init) } });
    const viaGemini = await genai.models.embedContent({ model: 'gemini-embedding-001', contents: 'embed through the gemini door', config: { taskType: 'RETRIEVAL_QUERY' } });
    expect(viaGemini.embeddings?.[0].values?.length).toBeGreaterThan(0);
    expect(predicts().at(-1)!.body).toMatchObject({ instances: [{ content: 'embed through the gemini door', task_type: 'RETRIEVAL_QUERY' }] });

    const rows = await ledgerOf(gw, record.id);
    expect(rows.map((r) => r.quota)).toEqual([gemini.usage.prompt_tokens, batch.usage.prompt_tokens, rows[2].prompt_tokens].map((t) => credits(Number(t), 0)));
    expect(Number(rows[2].prompt_tokens)).toBeGreaterThan(0);
  });

  it('without credentials, the token comes from the metadata server of the machine (Compute Engine, GKE, Cloud Run)', async () => {
    const { client } = await newKey(gw);
    const r = await client.chat.completions.create({ model: 'gemini-2.0-flash', messages: [{ role: 'user', content: 'on a google cloud machine' }] });
    expect(r.choices[0].message.content).toEqual(expect.any(String));
    const asked = sim.requests.filter((q) => q.path === '/computeMetadata/v1/instance/service-accounts/default/token');
    expect(asked).toHaveLength(1);
    expect(asked[0].headers['metadata-flavor']).toBe('Google');
    expect(lastVertex().headers.authorization).toMatch(/^Bearer ya29\.sim-/);
    await client.chat.completions.create({ model: 'gemini-2.0-flash', messages: [{ role: 'user', content: 'again, cached' }] });
    expect(sim.requests.filter((q) => q.path === '/computeMetadata/v1/instance/service-accounts/default/token')).toHaveLength(1);
  });

  it('a key the token endpoint refuses fails over to the next channel, and nothing secret is logged', async () => {
    const { client, record } = await newKey(gw);
    const r = await client.chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'failover' }] });
    expect(r.choices[0].message.content).toEqual(expect.any(String));
    expect((await ledgerOf(gw, record.id)).length).toBe(1);
    expect(gw.logs.text()).not.toContain('PRIVATE KEY');
    expect(gw.logs.text()).not.toContain('ya29.sim-');
  });

  it(`${CONCURRENT.toLocaleString('en')} concurrent calls on a cold channel mint one token`, async () => {
    const { key } = await newKey(gw, { remain_quota: 100_000_000 });
    const before = sim.google!.mints;
    const statuses = await Promise.all(
      Array.from({ length: CONCURRENT }, () =>
        fetch(`${gw.baseUrl}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 4, messages: [{ role: 'user', content: 'cold' }] }),
        }).then((x) => x.status),
      ),
    );
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(sim.google!.mints - before).toBe(1);
  }, 120_000);
});
