import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import { ConfigStore } from '../../src/gateway-config/store';
import { validateGatewayConfig } from '../../src/gateway-config/schema';
import { prepareBatch } from '../../src/domain/batches/prepare';
import { planProviderLines, submitProviderBatch } from '../../src/domain/batches/provider';
import { openAiProviderBatches } from '../../src/upstream/provider-batches';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startGateway, startWorker, type TestGateway } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { batchHistory } from '../helpers/batch-histories';

/**
 * Channels with `batch_api: true`: their models' lines go to the provider's own batch API (one provider batch per
 * channel, model names mapped, the channel's key), billed per line from the provider's usage at half the price; the
 * other lines of the same batch run through the relay at the regular price. A provider batch is created at most once.
 */
function config(simUrl: string) {
  const r = validateGatewayConfig(
    {
      channels: [
        { name: 'oa-batch', type: 'openai', base_url: `${simUrl}/v1`, key: 'sim-key', models: ['gpt-4o-mini'], batch_api: true, model_mapping: { 'gpt-4o-mini': 'gpt-4o-mini-2024-07-18' } },
        { name: 'oa', type: 'openai', base_url: `${simUrl}/v1`, key: 'sim-key', models: ['gpt-4.1'] },
        { name: 'an-batch', type: 'anthropic', base_url: `${simUrl}/v1`, key: 'sim-key', models: ['claude-sonnet-4'], batch_api: true },
      ],
      models: {
        'gpt-4o-mini': { input_per_1m: '0.15', output_per_1m: '0.6' },
        'gpt-4.1': { input_per_1m: '2', output_per_1m: '8' },
        'claude-sonnet-4': { input_per_1m: '3', output_per_1m: '15', batch_multiplier: '0.25' },
      },
    },
    'test',
  );
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config;
}

const line = (id: string, model: string) =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: `hello ${id}` }], max_tokens: 16 } });

describe('batches on channels with the provider batch API', () => {
  let sim: Simulator;
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'sim-key', maxRecords: 2000, batchMs: 300 });
    gw = await startGateway({ config: ConfigStore.fixed(config(sim.url)), inferenceBatches: { providerPollMs: { min: 100, max: 300 } } });
    worker = await startWorker(gw);
  });
  afterAll(async () => {
    await worker?.stop();
    await gw?.close();
    await sim?.close();
  });

  const ledger = async (batchId: string) =>
    (await gw.db.query(`SELECT request_id, channel, quota::bigint AS quota, prompt_tokens, completion_tokens FROM ledger WHERE request_id LIKE $1 ORDER BY request_id`, [`${batchId}:%`])).rows;
  const posts = (path: string) => sim.requests.filter((r) => r.method === 'POST' && r.path === path).length;

  it('an OpenAI batch: provider lines at half price, the other model through the relay, one output', async () => {
    const { client } = await newKey(gw);
    const before = { batches: posts('/v1/batches'), chat: posts('/v1/chat/completions') };
    const file = await client.files.create({ file: await toFile(Buffer.from([line('p1', 'gpt-4o-mini'), line('p2', 'gpt-4o-mini'), line('g1', 'gpt-4.1')].join('\n')), 'in.jsonl'), purpose: 'batch' });
    let b = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    for (let i = 0; i < 300 && b.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      b = await client.batches.retrieve(b.id);
    }
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 3, failed: 0 } });
    const out = (await (await client.files.content(b.output_file_id!)).text()).trim().split('\n').map((l) => JSON.parse(l));
    expect(out.map((l) => l.custom_id).sort()).toEqual(['g1', 'p1', 'p2']);
    // One provider batch for the two gpt-4o-mini lines, the model name mapped; one relayed call for gpt-4.1.
    expect(posts('/v1/batches') - before.batches).toBe(1);
    expect(posts('/v1/chat/completions') - before.chat).toBe(1);
    expect(out.find((l) => l.custom_id === 'p1').response.body.model).toBe('gpt-4o-mini-2024-07-18');
    const rows = await ledger(b.id);
    expect(rows.map((r) => [r.request_id.split(':')[1], r.channel])).toEqual([
      ['g1', 'oa'],
      ['p1', 'oa-batch'],
      ['p2', 'oa-batch'],
    ]);
    // Half of ceil((15p + 60c) / 200) credits, as the provider's usage says.
    const p1 = rows.find((r) => r.request_id.endsWith(':p1'))!;
    expect(Number(p1.quota)).toBe(Math.ceil((0.5 * (15 * p1.prompt_tokens + 60 * p1.completion_tokens)) / 200));
    expect(b.usage!.input_tokens).toBe(rows.reduce((s, r) => s + Number(r.prompt_tokens), 0));
    expect((await gw.db.query('SELECT count(*)::int AS n FROM quota_holds WHERE business_key LIKE $1', [`req:${b.id}:%`])).rows[0].n).toBe(0);
    await gw.temporal.workflow.getHandle(`batch:${b.id}`).result();
    const history = await batchHistory(gw.temporal, b.id, 'batch-provider');
    expect(history).toContain('collectProviderBatch');
    expect(history).not.toMatch(/sim-key|127\.0\.0\.1/);
  });

  it('an Anthropic batch on a batch_api channel runs there, at the model\'s batch_multiplier', async () => {
    const { key } = await newKey(gw);
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    const before = posts('/v1/messages/batches');
    const created = await anthropic.messages.batches.create({
      requests: ['a', 'b'].map((id) => ({ custom_id: id, params: { model: 'claude-sonnet-4', max_tokens: 16, messages: [{ role: 'user' as const, content: `hi ${id}` }] } })),
    });
    let b = await anthropic.messages.batches.retrieve(created.id);
    for (let i = 0; i < 300 && b.processing_status !== 'ended'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      b = await anthropic.messages.batches.retrieve(created.id);
    }
    expect(b.request_counts).toMatchObject({ succeeded: 2, errored: 0 });
    expect(posts('/v1/messages/batches') - before).toBe(1);
    const rows = await ledger(created.id);
    expect(rows).toHaveLength(2);
    const r = rows[0];
    expect(Number(r.quota)).toBe(Math.ceil((0.25 * (3 * r.prompt_tokens + 15 * r.completion_tokens) * 500000) / 1e6));
  });

  it('a provider batch is created at most once: a crash after the provider create finds it instead of creating another', async () => {
    // A gateway without a worker: the steps of the workflow run here, by hand.
    const idle = await startGateway({ config: ConfigStore.fixed(config(sim.url)), taskQueue: `no-worker-${randomUUID()}` });
    try {
      const { record, acct } = await newKey(idle);
      const client = new OpenAI({ apiKey: `sk-${record.key}`, baseURL: `${idle.baseUrl}/v1`, maxRetries: 0 });
      const file = await client.files.create({ file: await toFile(Buffer.from([line('c1', 'gpt-4o-mini'), line('c2', 'gpt-4o-mini')].join('\n')), 'in.jsonl'), purpose: 'batch' });
      const b = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
      expect(acct.id).toBeGreaterThan(0);
      const deps = idle.services.activities.inferenceBatches!;
      expect(await prepareBatch({ repos: deps.repos, store: deps.store, maxLines: deps.maxLines }, b.id)).toBe('ready');
      expect(await planProviderLines(deps.provider, b.id)).toEqual(['oa-batch']);
      const before = posts('/v1/batches');
      const crashing = { ...deps.provider, adapters: { openai: { ...openAiProviderBatches, create: async (...args: Parameters<typeof openAiProviderBatches.create>) => {
        await openAiProviderBatches.create(...args);
        throw new Error('the worker died before it recorded the provider batch');
      } } } };
      const signal = new AbortController().signal;
      await expect(submitProviderBatch(crashing, b.id, 'oa-batch', signal)).rejects.toThrow('the worker died');
      const id = await submitProviderBatch(deps.provider, b.id, 'oa-batch', signal);
      expect(id).toMatch(/^batch_/);
      expect(posts('/v1/batches') - before).toBe(1);
      // Each line's hold was taken once.
      expect((await idle.db.query('SELECT count(*)::int AS n FROM quota_holds WHERE business_key LIKE $1', [`req:${b.id}:%`])).rows[0].n).toBe(2);
      expect(await submitProviderBatch(deps.provider, b.id, 'oa-batch', signal)).toBe(id);
      expect(posts('/v1/batches') - before).toBe(1);
    } finally {
      await idle.close();
    }
  });
});
