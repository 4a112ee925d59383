// test modes: postgres, embedded
import WebSocket from 'ws';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { newAccount, startGateway, testGatewayConfig, type TestGateway } from '../helpers/harness';
import { rawRequest } from '../helpers/raw-http';
import { waitFor } from '../helpers/wait';

type Frame = Record<string, any>;

/** A WebSocket to the gateway's /v1/responses with the frames it received, and a way to wait for one. */
async function connect(gw: TestGateway, key: string) {
  const ws = new WebSocket(`${gw.baseUrl.replace(/^http/, 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${key}`, 'openai-beta': 'responses_websockets=2026-02-06' } });
  const frames: Frame[] = [];
  ws.on('message', (data) => frames.push(JSON.parse(data.toString())));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  /** The frames from `from` on, up to and including the first that ends a response (completed, failed, error). */
  const until = async (from: number) => {
    const end = () => frames.slice(from).findIndex((f) => ['response.completed', 'response.failed', 'response.incomplete', 'error'].includes(f.type));
    await waitFor(() => end() >= 0, { timeoutMs: 10_000 });
    return frames.slice(from, from + end() + 1);
  };
  return { ws, frames, until, send: (m: unknown) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)) };
}

/**
 * The Responses API over a WebSocket, as Codex speaks it: each response.create runs through the relay engine like
 * POST /v1/responses with stream: true, its events as text frames, one ledger row per response; previous_response_id
 * on the same connection continues it with the new input only; refusals are error frames.
 */
describe('responses over WebSocket', () => {
  let sim: Simulator;
  let gw: TestGateway;
  let off: TestGateway;
  let key: string;
  let tokenId: number;
  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'sim' });
    const config = () =>
      ConfigStore.fixed(
        testGatewayConfig({
          channels: [
            { name: 'chat-only', type: 'openai', base_url: `${sim.url}/v1`, key: 'sim', models: ['gpt-4o-mini'] },
            { name: 'native', type: 'openai', base_url: `${sim.url}/v1`, key: 'sim', models: ['gpt-4.1'], responses_api: true },
          ],
          models: { 'gpt-4o-mini': { input_per_1m: 0.15, output_per_1m: 0.6 }, 'gpt-4.1': { input_per_1m: 2, output_per_1m: 8 } },
        }),
      );
    gw = await startGateway({ config: config() });
    off = await startGateway({ config: config(), limits: { responsesWebSocket: false } });
    const acct = await newAccount(gw.db);
    const record = await gw.deps.tokens.create(acct.id, { name: 'ws', remain_quota: 50_000_000 });
    key = `sk-${record.key}`;
    tokenId = record.id;
  });
  afterAll(async () => {
    await gw?.close();
    await off?.close();
    await sim?.close();
  });
  const ledger = async () => (await gw.db.query('SELECT request_id, model, quota, is_stream FROM ledger WHERE token_id = $1 ORDER BY id', [tokenId])).rows;

  it.each(['gpt-4o-mini', 'gpt-4.1'])('%s: a response per response.create, its events as frames, billed once each; the next continues it', async (model) => {
    const c = await connect(gw, key);
    try {
      const before = (await ledger()).length;
      c.send({ type: 'response.create', model, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say hello' }] }], stream: true, store: false });
      const first = await c.until(0);
      expect(first[0].type).toBe('response.created');
      expect(first.some((f) => f.type === 'response.output_text.delta')).toBe(true);
      const done = first.at(-1)!;
      expect(done.type).toBe('response.completed');
      expect(done.response.usage.input_tokens).toBeGreaterThan(0);

      // The next turn names the last response and sends only its new input.
      sim.resetRecords();
      c.send({ type: 'response.create', model, previous_response_id: done.response.id, input: [{ type: 'message', role: 'user', content: 'And again' }], stream: true, store: false });
      const second = await c.until(first.length);
      expect(second.at(-1)!.type).toBe('response.completed');
      const upstream = sim.requests.find((r) => r.path.endsWith('/chat/completions') || r.path.endsWith('/responses'))!.body as Record<string, any>;
      const sent = JSON.stringify(upstream);
      // The whole conversation went upstream: the first input, its answer, the new input; no previous_response_id.
      expect(sent).toContain('Say hello');
      expect(sent).toContain('And again');
      expect(upstream.previous_response_id).toBeUndefined();
      await waitFor(async () => (await ledger()).length === before + 2);
      const rows = (await ledger()).slice(before);
      expect(rows.map((r) => [r.model, r.is_stream])).toEqual([
        [model, true],
        [model, true],
      ]);
      for (const r of rows) expect(Number(r.quota)).toBeGreaterThan(0);
    } finally {
      c.ws.close();
    }
  });

  it('a warm-up (generate: false) answers at once, unbilled; an unknown previous_response_id is previous_response_not_found', async () => {
    const c = await connect(gw, key);
    try {
      const before = (await ledger()).length;
      c.send({ type: 'response.create', model: 'gpt-4o-mini', input: [], generate: false, stream: true, store: false });
      const warm = await c.until(0);
      expect(warm.map((f) => f.type)).toEqual(['response.created', 'response.completed']);
      c.send({ type: 'response.create', model: 'gpt-4o-mini', previous_response_id: 'resp_unknown', input: [{ role: 'user', content: 'x' }], stream: true });
      const missing = await c.until(warm.length);
      expect(missing.at(-1)).toMatchObject({ type: 'error', status: 400, error: { code: 'previous_response_not_found' } });
      expect((await ledger()).length).toBe(before);
    } finally {
      c.ws.close();
    }
  });

  it('a malformed frame, a binary frame, an unknown type and a bad request get error frames; the connection stays', async () => {
    const c = await connect(gw, key);
    try {
      c.send('{not json');
      expect((await c.until(0)).at(-1)).toMatchObject({ type: 'error', status: 400, error: { code: 'invalid_json' } });
      c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
      expect((await c.until(1)).at(-1)).toMatchObject({ type: 'error', status: 400 });
      c.send({ type: 'response.cancel' });
      expect((await c.until(2)).at(-1)).toMatchObject({ type: 'error', status: 400, error: { param: 'type' } });
      c.send({ type: 'response.create', model: 'no-such-model', input: 'x' });
      expect((await c.until(3)).at(-1)).toMatchObject({ type: 'error', status: 404 });
      c.send({ type: 'response.create', model: 'gpt-4o-mini', input: 'still here' });
      expect((await c.until(4)).at(-1)!.type).toBe('response.completed');
    } finally {
      c.ws.close();
    }
  });

  it('a frame is bounded as a request body is: too deep, too long an array, too many waiting; the connection stays', async () => {
    const c = await connect(gw, key);
    try {
      c.send(`{"type":"response.create","model":"gpt-4o-mini","input":${'['.repeat(5000)}${']'.repeat(5000)}}`);
      expect((await c.until(0)).at(-1)).toMatchObject({ type: 'error', status: 400, error: { message: expect.stringContaining('levels deep') } });
      c.send(`{"type":"response.create","model":"gpt-4o-mini","input":[${Array(10_001).fill('1').join(',')}]}`);
      expect((await c.until(1)).at(-1)).toMatchObject({ type: 'error', status: 400, error: { message: expect.stringContaining('elements') } });
      // Sent at once, 40 responses queue behind each other: past 16 waiting, a message is refused at once.
      const before = c.frames.length;
      for (let i = 0; i < 40; i++) c.send({ type: 'response.create', model: 'gpt-4o-mini', input: `n${i}` });
      await waitFor(() => c.frames.slice(before).filter((f) => f.type === 'response.completed' || f.type === 'error').length === 40, { timeoutMs: 20_000 });
      const ends = c.frames.slice(before).filter((f) => f.type === 'response.completed' || f.type === 'error');
      expect(ends.filter((f) => f.type === 'error').every((f) => f.error.code === 'too_many_messages')).toBe(true);
      expect(ends.filter((f) => f.type === 'error').length).toBeGreaterThan(0);
      expect(ends.filter((f) => f.type === 'response.completed').length).toBeGreaterThanOrEqual(17);
      c.send({ type: 'response.create', model: 'gpt-4o-mini', input: 'still here' });
      await waitFor(() => c.frames.at(-1)?.type === 'response.completed', { timeoutMs: 10_000 });
    } finally {
      c.ws.close();
    }
  });

  it('a bad key is refused at the upgrade (401); turned off, the upgrade is a 426', async () => {
    const status = (target: TestGateway, k: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`${target.baseUrl.replace(/^http/, 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${k}` } });
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('open', () => {
          ws.close();
          resolve(101);
        });
        ws.on('error', () => undefined);
      });
    expect(await status(gw, 'sk-wrong')).toBe(401);
    // A plain GET of the path is no endpoint.
    expect((await fetch(`${gw.baseUrl}/v1/responses`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
    const offKey = `sk-${(await off.deps.tokens.create((await newAccount(off.db)).id, { remain_quota: 1000 })).key}`;
    expect(await status(off, offKey)).toBe(426);
  });

  it('a handshake ws would refuse is answered by the gateway: 400 in the OpenAI format with x-request-id; the 101 carries x-request-id', async () => {
    const port = Number(new URL(gw.baseUrl).port);
    const GOOD_KEY = 'dGhlIHNhbXBsZSBub25jZQ==';
    const handshake = (headers: Record<string, string>) => {
      const lines = Object.entries({ Host: `127.0.0.1:${port}`, Authorization: `Bearer ${key}`, Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': GOOD_KEY, ...headers })
        .filter(([, v]) => v !== '')
        .map(([k, v]) => `${k}: ${v}`);
      return Buffer.from(`GET /v1/responses HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`, 'latin1');
    };
    const cases: Array<[string, Record<string, string>, string]> = [
      ['no key', { 'Sec-WebSocket-Key': '' }, 'sec-websocket-key'],
      ['a key that is not 16 bytes', { 'Sec-WebSocket-Key': 'short' }, 'sec-websocket-key'],
      ['no version', { 'Sec-WebSocket-Version': '' }, 'sec-websocket-version'],
      ['an unsupported version', { 'Sec-WebSocket-Version': '12' }, 'sec-websocket-version'],
      ['Upgrade: h2c', { Upgrade: 'h2c' }, 'upgrade'],
      ['a malformed protocol list', { 'Sec-WebSocket-Protocol': 'a,,b' }, 'sec-websocket-protocol'],
      ['a duplicated protocol', { 'Sec-WebSocket-Protocol': 'chat, chat' }, 'sec-websocket-protocol'],
      ['a protocol with a space inside', { 'Sec-WebSocket-Protocol': 'a b' }, 'sec-websocket-protocol'],
    ];
    for (const [name, headers, param] of cases) {
      const out = await rawRequest(port, handshake(headers), { timeoutMs: 5_000 });
      if (!out.ok) throw new Error(`${name}: ${out.reason} ${out.received}`);
      const res = out.response;
      expect({ name, status: res.status, type: res.headers['content-type'] }).toEqual({ name, status: 400, type: expect.stringMatching(/^application\/json/) });
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
      expect(JSON.parse(res.body)).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param, code: expect.any(String) } });
      if (param === 'sec-websocket-version') expect(res.headers['sec-websocket-version']).toBe('13, 8');
    }
    // A valid handshake is switched, and its 101 names the request.
    const upgraded = await new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
      const ws = new WebSocket(`${gw.baseUrl.replace(/^http/, 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${key}` } });
      ws.on('upgrade', (res) => {
        resolve(res.headers);
        ws.close();
      });
      ws.on('error', reject);
    });
    expect(upgraded['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    // The gateway still serves a WebSocket afterwards.
    const c = await connect(gw, key);
    c.send({ type: 'response.create', model: 'gpt-4.1', input: 'hi' });
    expect((await c.until(0)).at(-1)?.type).toBe('response.completed');
    c.ws.close();
  });

  it('a client gone mid-response is not billed', async () => {
    sim.setOptions({ chunkDelayMs: 200, streamChunks: 10 });
    try {
      const before = (await ledger()).length;
      const c = await connect(gw, key);
      c.send({ type: 'response.create', model: 'gpt-4o-mini', input: 'long answer please' });
      await waitFor(() => c.frames.some((f) => f.type === 'response.output_text.delta'), { timeoutMs: 10_000 });
      c.ws.terminate();
      // The relay logs the stream's end as the client gone (write_response_body_failed), and bills nothing.
      await waitFor(() => gw.logs.text().includes('write_response_body_failed'), { timeoutMs: 10_000 });
      const holds = async () => (await gw.db.query('SELECT count(*)::int AS n FROM quota_holds WHERE token_id = $1', [tokenId])).rows[0].n;
      await waitFor(async () => (await holds()) === 0, { timeoutMs: 10_000 });
      expect((await ledger()).length).toBe(before);
    } finally {
      sim.setOptions({ chunkDelayMs: 0, streamChunks: 5 });
    }
  });
});
