// test modes: postgres, embedded
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI, { toFile } from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { newKey } from '../helpers/relay-fixture';
import { http, startGateway, startWorker, type TestGateway } from '../helpers/harness';
import { batchHistory } from '../helpers/batch-histories';

/**
 * Batch inference through the official clients: files.create, batches.create / retrieve / list / cancel, the output
 * and error files; messages.batches.create / retrieve / results. Lines run through the relay as the creating key
 * and are billed once each, only when they succeeded.
 */

type ApiError = InstanceType<typeof OpenAI.APIError>;

const chatLine = (customId: string, content: string, model = 'gpt-4o-mini') =>
  JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content }], max_tokens: 16 } });

const jsonl = (lines: string[]) => toFile(Buffer.from(lines.join('\n') + '\n'), 'input.jsonl', { type: 'application/jsonl' });

describe('batch inference with the official clients', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  beforeAll(async () => {
    gw = await startGateway({ inferenceBatches: { concurrency: 8, maxInputLines: 50 } });
    worker = await startWorker(gw);
  });
  afterAll(async () => {
    await worker?.stop();
    await gw?.close();
  });

  async function untilEnded(client: OpenAI, id: string) {
    let b = await client.batches.retrieve(id);
    for (let i = 0; i < 600 && !['completed', 'failed', 'expired', 'cancelled'].includes(b.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      b = await client.batches.retrieve(id);
    }
    return b;
  }

  const parseJsonl = (text: string) => text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));

  async function ledgerOfBatch(batchId: string) {
    const r = await gw.db.query(
      `SELECT request_id, quota::bigint AS quota, prompt_tokens, completion_tokens FROM ledger WHERE request_id LIKE $1 ORDER BY request_id`,
      [`${batchId}:%`],
    );
    return r.rows.map((x) => ({ ...x, quota: Number(x.quota) }));
  }

  it('runs a chat batch to completed: every custom_id once in the output, each line billed once, usage equal to the ledger', async () => {
    const { client, record, acct } = await newKey(gw);
    const file = await client.files.create({ file: await jsonl(Array.from({ length: 12 }, (_, i) => chatLine(`req-${i}`, `hello ${i}`))), purpose: 'batch' });
    expect(file).toMatchObject({ id: expect.stringMatching(/^file-[0-9a-f]{24}$/), object: 'file', purpose: 'batch', filename: 'input.jsonl', status: 'processed' });
    expect(await client.files.retrieve(file.id)).toMatchObject({ id: file.id, bytes: file.bytes });

    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { run: 'one' } });
    expect(created).toMatchObject({ id: expect.stringMatching(/^batch_/), object: 'batch', status: 'validating', endpoint: '/v1/chat/completions', metadata: { run: 'one' } });
    const done = await untilEnded(client, created.id);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 12, completed: 12, failed: 0 }, error_file_id: null });
    expect(done.completed_at).toEqual(expect.any(Number));
    expect(done.in_progress_at).toEqual(expect.any(Number));

    const output = parseJsonl(await (await client.files.content(done.output_file_id!)).text());
    expect(output.map((l) => l.custom_id).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `req-${i}`).sort());
    for (const l of output) {
      expect(l).toMatchObject({ id: expect.stringMatching(/^batch_req_/), response: { status_code: 200, body: { object: 'chat.completion' } }, error: null });
    }
    const ledger = await ledgerOfBatch(created.id);
    expect(ledger).toHaveLength(12);
    expect(ledger.every((r) => r.quota > 0)).toBe(true);
    const input = ledger.reduce((s, r) => s + Number(r.prompt_tokens), 0);
    const out = ledger.reduce((s, r) => s + Number(r.completion_tokens), 0);
    expect(done.usage).toMatchObject({ input_tokens: input, output_tokens: out, total_tokens: input + out });
    const used = (await gw.db.query('SELECT used_quota FROM tokens WHERE id = $1', [record.id])).rows[0].used_quota;
    expect(Number(used)).toBe(ledger.reduce((s, r) => s + r.quota, 0));

    const list = await client.batches.list({ limit: 5 });
    expect(list.data.map((b) => b.id)).toContain(created.id);

    // The console's view (system token): progress, counts, the files.
    const mine = await http(gw.baseUrl, 'GET', '/api/batches/?page_size=5', { auth: acct.systemToken });
    expect(mine.status).toBe(200);
    expect(mine.body.data.find((b: { id: string }) => b.id === created.id)).toMatchObject({ api: 'openai', status: 'completed', total: 12, succeeded: 12, has_output: true, has_errors: false });
    const download = await fetch(`${gw.baseUrl}/api/batches/${created.id}/files/output`, { headers: { authorization: acct.systemToken } });
    expect(parseJsonl(await download.text())).toHaveLength(12);
    const other = await newKey(gw);
    expect((await http(gw.baseUrl, 'GET', `/api/batches/${created.id}`, { auth: other.acct.systemToken })).status).toBe(404);
    // The call log shows each line with its batch id; /metrics counts the lines.
    const log = await http(gw.baseUrl, 'GET', '/api/log/?page_size=50', { auth: acct.systemToken });
    expect(log.body.data.filter((e: { request_id: string }) => e.request_id.startsWith(`${created.id}:`))).toHaveLength(12);
    const metrics = await (await fetch(`${gw.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/gateway_batch_lines_total\{mode="gateway",outcome="succeeded"\} \d+/);
    expect(metrics).toMatch(/gateway_batches\{api="openai",status="completed"\} \d+/);
    await gw.temporal.workflow.getHandle(`batch:${created.id}`).result();
    const history = await batchHistory(gw.temporal, created.id, 'batch-completed');
    expect(history).not.toMatch(/sk-[A-Za-z0-9]{8}|Bearer /);
  });

  it('runs embeddings and a model on an anthropic channel (translated) in one gateway', async () => {
    const { client } = await newKey(gw);
    const lines = [
      JSON.stringify({ custom_id: 'e1', method: 'POST', url: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: 'one' } }),
      JSON.stringify({ custom_id: 'e2', method: 'POST', url: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: ['two', 'three'] } }),
    ];
    const file = await client.files.create({ file: await jsonl(lines), purpose: 'batch' });
    const emb = await untilEnded(client, (await client.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' })).id);
    expect(emb).toMatchObject({ status: 'completed', request_counts: { total: 2, completed: 2, failed: 0 } });
    const out = parseJsonl(await (await client.files.content(emb.output_file_id!)).text());
    expect(out.find((l) => l.custom_id === 'e2').response.body.data).toHaveLength(2);

    const claude = await client.files.create({ file: await jsonl([chatLine('c1', 'hi claude', 'claude-sonnet-4')]), purpose: 'batch' });
    const b = await untilEnded(client, (await client.batches.create({ input_file_id: claude.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id);
    expect(b.status).toBe('completed');
    const line = parseJsonl(await (await client.files.content(b.output_file_id!)).text())[0];
    expect(line.response.body).toMatchObject({ object: 'chat.completion', model: 'claude-sonnet-4' });
  });

  it('a line the upstream or the gateway refuses ends in the error file, unbilled; the others complete', async () => {
    const { client } = await newKey(gw, { models: 'gpt-4o-mini' });
    const lines = [chatLine('ok', 'fine'), chatLine('no-model', 'x', 'gpt-4.1'), JSON.stringify({ custom_id: 'bad-body', method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini' } })];
    const file = await client.files.create({ file: await jsonl(lines), purpose: 'batch' });
    const b = await untilEnded(client, (await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 1, failed: 2 } });
    const errors = parseJsonl(await (await client.files.content(b.error_file_id!)).text());
    expect(errors.map((e) => e.custom_id).sort()).toEqual(['bad-body', 'no-model']);
    const noModel = errors.find((e) => e.custom_id === 'no-model');
    expect(noModel.response.status_code).toBe(403);
    expect(noModel.response.body.error).toMatchObject({ type: expect.any(String), message: expect.any(String) });
    expect(errors.find((e) => e.custom_id === 'bad-body').response).toMatchObject({ status_code: 400, body: { error: { param: 'messages' } } });
    expect((await ledgerOfBatch(b.id)).map((r) => r.request_id)).toEqual([`${b.id}:ok`]);
  });

  it('an input with a bad line fails the batch naming the line, and nothing is sent or billed', async () => {
    const { client } = await newKey(gw);
    const lines = [chatLine('a', 'x'), 'not json', chatLine('a', 'dup'), JSON.stringify({ custom_id: 'u', method: 'POST', url: '/v1/embeddings', body: {} }), JSON.stringify({ custom_id: 'm', method: 'GET', url: '/v1/chat/completions', body: {} })];
    const file = await client.files.create({ file: await jsonl(lines), purpose: 'batch' });
    const sent = gw.simulator!.requests.length;
    const b = await untilEnded(client, (await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id);
    expect(b.status).toBe('failed');
    expect(b.failed_at).toEqual(expect.any(Number));
    expect(b.errors?.data?.map((e) => [e.line, e.code])).toEqual([
      [2, 'invalid_json_line'],
      [3, 'duplicate_custom_id'],
      [4, 'invalid_url'],
      [5, 'invalid_method'],
    ]);
    expect(gw.simulator!.requests.length).toBe(sent);
    expect(await ledgerOfBatch(b.id)).toEqual([]);
  });


  it('lines PostgreSQL could not store or the gateway could not walk fail the batch naming them, never leaving it validating', async () => {
    const { client } = await newKey(gw);
    let deep = '"x"';
    for (let i = 0; i < 10_000; i++) deep = `[${deep}]`;
    const line = (customId: string, content: string) => chatLine(customId, content);
    const lines = [
      line('ok', 'fine'),
      `{"custom_id":"deep","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":${deep}}}`,
      line('nul-body', 'a\u0000b'),
      JSON.stringify({ custom_id: 'nul\u0000id', method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [] } }),
      line('surrogate', 'x').replace('"x"', '"\\ud800"'),
      line('key', 'x').replace('"messages"', '"mess\\u0000ages"'),
    ];
    const file = await client.files.create({ file: await jsonl(lines), purpose: 'batch' });
    const sent = gw.simulator!.requests.length;
    const b = await untilEnded(client, (await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id);
    expect(b.status).toBe('failed');
    expect(b.errors?.data?.map((e) => [e.line, e.code])).toEqual([
      [2, 'invalid_json_line'],
      [3, 'invalid_json_line'],
      [4, 'invalid_json_line'],
      [5, 'invalid_json_line'],
      [6, 'invalid_json_line'],
    ]);
    expect(b.errors?.data?.[0].message).toMatch(/more than 64 levels deep/);
    expect(b.errors?.data?.[1].message).toMatch(/NUL/);
    expect(b.errors?.data?.[3].message).toMatch(/surrogate/);
    expect(gw.simulator!.requests.length).toBe(sent);
    expect(await ledgerOfBatch(b.id)).toEqual([]);
  });
  it('files: purpose other than batch is a 400 naming purpose; too many lines a 413; another account sees 404s', async () => {
    const { client } = await newKey(gw);
    const bad = await client.files.create({ file: await jsonl([chatLine('a', 'x')]), purpose: 'fine-tune' }).catch((e: ApiError) => e);
    expect(bad).toMatchObject({ status: 400, param: 'purpose' });
    const big = await client.files.create({ file: await jsonl(Array.from({ length: 51 }, (_, i) => chatLine(`l${i}`, 'x'))), purpose: 'batch' }).catch((e: ApiError) => e);
    expect(big).toMatchObject({ status: 413 });
    expect((await client.files.list()).data.every((f) => f.purpose === 'batch')).toBe(true);

    const file = await client.files.create({ file: await jsonl([chatLine('a', 'x')]), purpose: 'batch' });
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const other = (await newKey(gw)).client;
    expect(await other.files.retrieve(file.id).catch((e: ApiError) => e.status)).toBe(404);
    expect(await other.files.content(file.id).catch((e: ApiError) => e.status)).toBe(404);
    expect(await other.files.delete(file.id).catch((e: ApiError) => e.status)).toBe(404);
    expect(await other.batches.retrieve(batch.id).catch((e: ApiError) => e.status)).toBe(404);
    expect(await other.batches.cancel(batch.id).catch((e: ApiError) => e.status)).toBe(404);
    expect(await other.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }).catch((e: ApiError) => e.status)).toBe(404);
    expect((await other.batches.list()).data).toEqual([]);
    await untilEnded(client, batch.id);
    expect(await client.files.delete(file.id)).toMatchObject({ id: file.id, deleted: true });
    expect(await client.files.retrieve(file.id).catch((e: ApiError) => e.status)).toBe(404);
  });

  it('a key that runs out of quota mid-batch: no more lines are sent, the rest end insufficient_quota, nothing overspent', async () => {
    // One call of gpt-4.1 costs about 75 credits here: room for a few lines only.
    const { client, record } = await newKey(gw, { remain_quota: 300 });
    const file = await client.files.create({ file: await jsonl(Array.from({ length: 40 }, (_, i) => chatLine(`q${i}`, `line ${i}`, 'gpt-4.1'))), purpose: 'batch' });
    const b = await untilEnded(client, (await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id);
    expect(b.status).toBe('completed');
    expect(b.request_counts!.completed).toBeGreaterThan(0);
    expect(b.request_counts!.failed).toBeGreaterThan(0);
    expect(b.request_counts!.completed + b.request_counts!.failed).toBe(40);
    const errors = parseJsonl(await (await client.files.content(b.error_file_id!)).text());
    expect(errors.every((e) => e.response.status_code === 429 && e.response.body.error.code === 'insufficient_quota')).toBe(true);
    const ledger = await ledgerOfBatch(b.id);
    expect(ledger).toHaveLength(b.request_counts!.completed);
    const token = (await gw.db.query('SELECT remain_quota, used_quota FROM tokens WHERE id = $1', [record.id])).rows[0];
    expect(Number(token.remain_quota)).toBeGreaterThanOrEqual(0);
    expect(Number(token.used_quota)).toBe(ledger.reduce((s, r) => s + r.quota, 0));
    expect(Number(token.used_quota)).toBeLessThanOrEqual(300);
  });

  it("a key's periodic budget holds across a batch: the rest end insufficient_quota once the period's budget is spent", async () => {
    const { client, record, acct } = await newKey(gw);
    const set = await http(gw.baseUrl, 'PUT', '/api/token/', {
      auth: acct.systemToken,
      body: { id: record.id, name: record.name, remain_quota: 10_000_000, period_quota: 300, quota_period: 'day' },
    });
    expect(set.status).toBe(200);
    const file = await client.files.create({ file: await jsonl(Array.from({ length: 30 }, (_, i) => chatLine(`d${i}`, `day ${i}`, 'gpt-4.1'))), purpose: 'batch' });
    const b = await untilEnded(client, (await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id);
    expect(b.status).toBe('completed');
    expect(b.request_counts!.completed).toBeGreaterThan(0);
    expect(b.request_counts!.failed).toBeGreaterThan(0);
    const errors = parseJsonl(await (await client.files.content(b.error_file_id!)).text());
    expect(errors.every((e) => e.response.body.error.code === 'insufficient_quota')).toBe(true);
    const ledger = await ledgerOfBatch(b.id);
    expect(ledger).toHaveLength(b.request_counts!.completed);
    const row = (await gw.db.query('SELECT period_used::bigint AS used FROM tokens WHERE id = $1', [record.id])).rows[0];
    expect(Number(row.used)).toBe(ledger.reduce((s, r) => s + r.quota, 0));
    expect(Number(row.used)).toBeLessThanOrEqual(300);
  });

  it('cancel: cancelling at once, cancelled when the lines in flight end; lines done before stay billed, the rest never sent', async () => {
    const { client } = await newKey(gw);
    gw.simulator!.setOptions({ latencyMs: 300 });
    try {
      const file = await client.files.create({ file: await jsonl(Array.from({ length: 50 }, (_, i) => chatLine(`c${i}`, `slow ${i}`))), purpose: 'batch' });
      const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
      let b = await client.batches.retrieve(created.id);
      while (b.request_counts!.completed < 8) b = await client.batches.retrieve(created.id);
      const cancelling = await client.batches.cancel(created.id);
      expect(cancelling.status).toBe('cancelling');
      expect(cancelling.cancelling_at).toEqual(expect.any(Number));
      const ended = await untilEnded(client, created.id);
      expect(ended.status).toBe('cancelled');
      expect(ended.cancelled_at).toEqual(expect.any(Number));
      const done = ended.request_counts!.completed;
      expect(done).toBeLessThan(50);
      const output = parseJsonl(await (await client.files.content(ended.output_file_id!)).text());
      const errors = parseJsonl(await (await client.files.content(ended.error_file_id!)).text());
      expect(output).toHaveLength(done);
      expect(output.length + errors.length).toBe(50);
      expect(errors.every((e) => e.response === null && e.error.code === 'batch_cancelled')).toBe(true);
      expect(await ledgerOfBatch(created.id)).toHaveLength(done);
      await gw.temporal.workflow.getHandle(`batch:${created.id}`).result();
      await batchHistory(gw.temporal, created.id, 'batch-cancelled');
      const sentLines = gw.simulator!.requests.filter((r) => /slow \d+/.test(JSON.stringify(r.body ?? '')) && JSON.stringify(r.body).includes('slow')).length;
      expect(sentLines).toBeLessThanOrEqual(done + 8);
    } finally {
      gw.simulator!.setOptions({ latencyMs: 0 });
    }
  });

  it('expiry: lines not sent by the end of the completion window end batch_expired, unbilled; X-Callback-Url gets batch.expired', async () => {
    const received: Array<{ headers: Record<string, unknown>; body: any }> = [];
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (d) => (text += d));
      req.on('end', () => {
        received.push({ headers: req.headers, body: JSON.parse(text) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const hook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const { client } = await newKey(gw);
    gw.simulator!.setOptions({ latencyMs: 300 });
    try {
      const file = await client.files.create({ file: await jsonl(Array.from({ length: 40 }, (_, i) => chatLine(`x${i}`, `expiring ${i}`))), purpose: 'batch' });
      const created = await client.batches.create(
        { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' },
        { headers: { 'X-Callback-Url': hook } },
      );
      let b = await client.batches.retrieve(created.id);
      while (b.request_counts!.completed < 8) b = await client.batches.retrieve(created.id);
      // The 24 hours are up.
      await gw.db.query('UPDATE inference_batches SET expires_at = $2 WHERE id = $1', [created.id, Math.floor(Date.now() / 1000)]);
      const ended = await untilEnded(client, created.id);
      expect(ended.status).toBe('expired');
      expect(ended.expired_at).toEqual(expect.any(Number));
      const done = ended.request_counts!.completed;
      expect(done).toBeLessThan(40);
      const errors = parseJsonl(await (await client.files.content(ended.error_file_id!)).text());
      expect(errors).toHaveLength(40 - done);
      expect(errors.every((e) => e.error.code === 'batch_expired')).toBe(true);
      expect(await ledgerOfBatch(created.id)).toHaveLength(done);
      for (let i = 0; i < 100 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(received).toHaveLength(1);
      expect(received[0].body).toMatchObject({ object: 'event', type: 'batch.expired', data: { id: created.id } });
      expect(received[0].headers).toMatchObject({ 'webhook-id': `msg_${created.id}`, 'webhook-signature': expect.stringMatching(/^v1,/) });
    } finally {
      gw.simulator!.setOptions({ latencyMs: 0 });
      server.close();
    }
  });

  it('a batch recorded by a process that died before starting its workflow starts when it is read', async () => {
    const { client, record } = await newKey(gw);
    const file = await client.files.create({ file: await jsonl([chatLine('r1', 'revived')]), purpose: 'batch' });
    const id = `batch_${'0'.repeat(24)}${Date.now().toString(16).slice(-8)}`;
    const created = Math.floor(Date.now() / 1000) - 60;
    await gw.db.query(
      `INSERT INTO inference_batches (id, api, account_id, token_id, token_name, endpoint, input_file_id, status, request_id, created_at, expires_at)
       VALUES ($1, 'openai', $2, $3, $4, '/v1/chat/completions', $5, 'validating', 'req-died', $6, $7)`,
      [id, record.user_id, record.id, record.name, file.id, created, created + 86_400],
    );
    const b = await untilEnded(client, id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 1, completed: 1, failed: 0 } });
  });

  it('an upstream 429 past failover is waited out (its Retry-After) and the line sent again; billed once', async () => {
    const { client } = await newKey(gw);
    gw.simulator!.addFault({ kind: 'status', status: 429, count: 2, path: '/chat/completions', model: 'gpt-4.1-mini' });
    const file = await client.files.create({ file: await jsonl([chatLine('busy', 'try again', 'gpt-4.1-mini')]), purpose: 'batch' });
    const started = Date.now();
    const b = await untilEnded(client, (await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 1, completed: 1, failed: 0 } });
    // Two refusals, each waited out for at least the upstream's Retry-After (1 s).
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(await ledgerOfBatch(b.id)).toHaveLength(1);
  });

  it('Anthropic Message Batches: create, retrieve, list, results in the Messages shape, for models on both channel types', async () => {
    const { key } = await newKey(gw);
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseUrl, maxRetries: 0 });
    const params = (model: string, text: string) => ({ model, max_tokens: 32, messages: [{ role: 'user' as const, content: text }] });
    const created = await anthropic.messages.batches.create({
      requests: [
        { custom_id: 'native', params: params('claude-sonnet-4', 'hello') },
        { custom_id: 'translated', params: params('gpt-4o-mini', 'hello') },
        { custom_id: 'unknown', params: params('no-such-model', 'hello') },
      ],
    });
    expect(created).toMatchObject({ id: expect.stringMatching(/^msgbatch_/), type: 'message_batch', processing_status: 'in_progress', results_url: null });
    let b = await anthropic.messages.batches.retrieve(created.id);
    for (let i = 0; i < 300 && b.processing_status !== 'ended'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      b = await anthropic.messages.batches.retrieve(created.id);
    }
    expect(b).toMatchObject({ processing_status: 'ended', request_counts: { processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 } });
    expect(b.results_url).toBe(`${gw.baseUrl}/v1/messages/batches/${created.id}/results`);
    const results: Record<string, { type: string; message?: { type: string; model: string }; error?: { type: string } }> = {};
    for await (const r of await anthropic.messages.batches.results(created.id)) results[r.custom_id] = r.result as never;
    expect(results.native).toMatchObject({ type: 'succeeded', message: { type: 'message', model: 'claude-sonnet-4' } });
    expect(results.translated).toMatchObject({ type: 'succeeded', message: { type: 'message', model: 'gpt-4o-mini' } });
    expect(results.unknown).toMatchObject({ type: 'errored', error: { type: 'error' } });
    await gw.temporal.workflow.getHandle(`batch:${created.id}`).result();
    await batchHistory(gw.temporal, created.id, 'batch-anthropic');
    const page = await anthropic.messages.batches.list({ limit: 10 });
    expect(page.data.map((x) => x.id)).toContain(created.id);
    expect(await anthropic.messages.batches.delete(created.id)).toMatchObject({ id: created.id, type: 'message_batch_deleted' });
    expect(await anthropic.messages.batches.retrieve(created.id).catch((e: { status: number }) => e.status)).toBe(404);
  });
});
