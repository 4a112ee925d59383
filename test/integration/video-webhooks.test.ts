// test modes: postgres, embedded
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { exportWorkflowHistory } from '../../src/temporal/history';
import { http } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { pollUntil, startVideoFixture, type VideoFixture } from '../helpers/video-fixture';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

/** A webhook receiver on loopback that fails the first `failures` deliveries of each id with 500. */
async function startReceiver(failures: number): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const seen = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      const answered = n <= failures ? 500 : 204;
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
      res.writeHead(answered).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks/video`, received, close: () => new Promise((r) => server.close(() => r())) };
}

async function until<T>(read: () => T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = read();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Issue 8 §4: a terminal task is POSTed to X-Callback-Url, signed by the Standard Webhooks convention, retried. */
describe('video tasks: webhooks', () => {
  let fx: VideoFixture;
  beforeAll(async () => {
    fx = await startVideoFixture({ webhookRetry: { initialIntervalMs: 200, maximumIntervalMs: 400 } });
  });
  afterAll(async () => {
    await fx?.close();
  });

  it('delivers the final task object, verifiable with the openai SDK, retrying a failing receiver with one webhook-id', async () => {
    const receiver = await startReceiver(2);
    try {
      const { key, acct } = await newKey(fx.gw);
      const secretRes = await http(fx.gw.baseUrl, 'GET', '/api/user/webhook-secret', { auth: acct.systemToken });
      expect(secretRes.status).toBe(200);
      const secret: string = secretRes.body.data.secret;
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
      expect((await http(fx.gw.baseUrl, 'GET', '/api/user/webhook-secret', { auth: acct.systemToken })).body.data.secret).toBe(secret);

      const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', {
        auth: key,
        headers: { 'x-callback-url': receiver.url },
        body: { model: 'video-3.1', prompt: 'call me back' },
      });
      const id = created.body.id;
      await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed');
      const ok = await until(() => receiver.received.find((r) => r.answered === 204), 'a delivered webhook');

      // Two 500s, then the delivery: three attempts, one webhook-id, each signed afresh.
      expect(receiver.received.map((r) => r.answered)).toEqual([500, 500, 204]);
      expect(new Set(receiver.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([`msg_${id}`]));
      const body = JSON.parse(ok.body);
      expect(body).toMatchObject({ id, object: 'video', status: 'completed', model: 'video-3.1', url: expect.stringContaining(`/v1/files/video/${id}?`) });
      expect(new URL(body.url).origin).toBe(fx.gw.baseUrl);
      const client = new OpenAI({ apiKey: 'unused', maxRetries: 0 });
      const headers = Object.fromEntries(Object.entries(ok.headers).map(([k, v]) => [k, String(v)]));
      await expect(client.webhooks.unwrap(ok.body, headers, secret)).resolves.toEqual(body);
      await expect(client.webhooks.verifySignature(ok.body, headers, 'whsec_' + Buffer.alloc(32, 1).toString('base64'))).rejects.toThrow();

      const attempts = await fx.gw.db.query('SELECT attempt, status, delivered FROM webhook_attempts WHERE task_id = $1 ORDER BY id', [id]);
      expect(attempts.rows).toEqual([
        { attempt: 1, status: 500, delivered: false },
        { attempt: 2, status: 500, delivered: false },
        { attempt: 3, status: 204, delivered: true },
      ]);
      const listed = await http(fx.gw.baseUrl, 'GET', `/api/task/${id}/webhooks`, { auth: acct.systemToken });
      expect(listed.body.data.map((a: any) => [a.attempt, a.status, a.delivered])).toEqual([[1, 500, false], [2, 500, false], [3, 204, true]]);
      expect(listed.body.data[0].created_at).toBeGreaterThan(1_700_000_000);

      // Every attempt sent the same bytes (the link in it expires a day after the task finished).
      expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1);
      const exp = Number(new URL(body.url).searchParams.get('exp'));
      const finished = await fx.gw.db.query('SELECT floor(extract(epoch FROM finished_at))::bigint AS f FROM video_tasks WHERE id = $1', [id]);
      expect(exp).toBe(Number(finished.rows[0].f) + 24 * 3600);
      // Neither the secret nor the live signed link is in any workflow history (the video task's or the delivery's).
      const sig = new URL(body.url).searchParams.get('sig')!;
      for (const workflowId of [`video:${id}`, `webhook:${id}`]) {
        const text = await exportWorkflowHistory(fx.gw.temporal, workflowId, undefined, { allRuns: true });
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secret.slice('whsec_'.length));
        expect(text).not.toContain(sig);
        expect(text).not.toMatch(/sig=|\/v1\/files\/video\//);
      }
      const audit = await fx.gw.db.query('SELECT details::text AS d FROM audit_events WHERE account_id = $1', [acct.id]);
      for (const row of audit.rows) expect(row.d).not.toContain(secret.slice('whsec_'.length));
    } finally {
      await receiver.close();
    }
  });

  it('a failed task is delivered too; rotation changes the signing secret; the secret needs a system token', async () => {
    const receiver = await startReceiver(0);
    try {
      const { key, acct } = await newKey(fx.gw);
      const first = (await http(fx.gw.baseUrl, 'GET', '/api/user/webhook-secret', { auth: acct.systemToken })).body.data.secret;
      const rotated = await http(fx.gw.baseUrl, 'POST', '/api/user/webhook-secret/rotate', { auth: acct.systemToken });
      expect(rotated.status).toBe(200);
      const secret = rotated.body.data.secret;
      expect(secret).not.toBe(first);

      const { task_id: id } = (
        await http(fx.gw.baseUrl, 'POST', '/vendorA/api/v1/services/aigc/video-generation/video-synthesis', {
          auth: `Bearer ${key}`,
          headers: { 'x-vendor-async': 'enable', 'x-callback-url': receiver.url },
          body: { model: 'vendorA-2.7-r2v', input: { prompt: 'this will fail' } },
        })
      ).body.output;
      const got = await until(() => receiver.received[0], 'the webhook of a failed task');
      expect(JSON.parse(got.body)).toMatchObject({ status: 'failed', task_id: id, result_url: null, error: { code: 'generation_failed' } });
      const client = new OpenAI({ apiKey: 'unused', maxRetries: 0 });
      const headers = Object.fromEntries(Object.entries(got.headers).map(([k, v]) => [k, String(v)]));
      await expect(client.webhooks.verifySignature(got.body, headers, secret)).resolves.toBeUndefined();
      await expect(client.webhooks.verifySignature(got.body, headers, first)).rejects.toThrow();

      const withKey = await http(fx.gw.baseUrl, 'GET', '/api/user/webhook-secret', { auth: key });
      expect(withKey.status).toBe(401);
      expect(withKey.body).toEqual({ success: false, message: expect.any(String) });
    } finally {
      await receiver.close();
    }
  });
});

/** Webhooks reach public addresses only: refused at submit when the URL shows it, at delivery when DNS does. */
describe('video tasks: webhooks go to public addresses only (production policy)', () => {
  let fx: VideoFixture;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver(0);
    // A production gateway (no loopback, no allowlist) whose DNS answers loopback for one name and an allowlisted
    // name: the attacker's rebinding name is refused, the operator's listed one is called at the address checked.
    fx = await startVideoFixture({
      webhookRetry: { initialIntervalMs: 200, maximumIntervalMs: 400 },
      outbound: {
        allowLoopback: false,
        allow: ['hooks.internal.test'],
        resolve: async (host) => (host === 'rebind.example.com' || host === 'hooks.internal.test' ? ['127.0.0.1'] : []),
      },
    });
  });
  afterAll(async () => {
    await fx?.close();
    await receiver?.close();
  });

  const submit = (key: string, url: string) =>
    http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, headers: { 'x-callback-url': url }, body: { model: 'video-3.1', prompt: 'call me back' } });

  it('refuses every loopback, private, link-local, CGNAT and unique-local form at submit, and plain http', async () => {
    const { key } = await newKey(fx.gw);
    const refused = [
      'http://127.0.0.1/h', 'http://localhost/h', 'http://[::1]/h', 'http://2130706433/h', 'http://0x7f000001/h', 'http://127.1/h',
      'https://127.0.0.1/h', 'https://localhost./h', 'https://169.254.169.254/latest/meta-data', 'https://10.0.0.1/h', 'https://192.168.1.1/h',
      'https://[fd00::1]/h', 'https://100.64.0.1/h', 'https://[::ffff:127.0.0.1]/h', 'https://[::ffff:a9fe:a9fe]/h', 'https://0.0.0.0/h',
      'https://224.0.0.1/h', 'https://[fe80::1]/h', 'http://example.com/h',
    ];
    for (const url of refused) {
      const res = await submit(key, url);
      expect([url, res.status, res.body.error?.code]).toEqual([url, 400, 'invalid_callback_url']);
      expect(res.body.error.message).toMatch(/^X-Callback-Url: (not a public address|must be an https URL)/);
    }
  });

  it('a name that resolves to loopback is refused at delivery, once, with nothing said about what listens there', async () => {
    const { key, acct } = await newKey(fx.gw);
    const created = await submit(key, `https://rebind.example.com:${new URL(receiver.url).port}/hooks/video`);
    expect(created.status).toBe(200);
    const id = created.body.id;
    await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed');
    // The delivery starts just after the task reads completed: wait for its attempt.
    let listed = await http(fx.gw.baseUrl, 'GET', `/api/task/${id}/webhooks`, { auth: acct.systemToken });
    for (let i = 0; i < 300 && listed.body.data.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      listed = await http(fx.gw.baseUrl, 'GET', `/api/task/${id}/webhooks`, { auth: acct.systemToken });
    }
    await expect(fx.gw.temporal.workflow.getHandle(`webhook:${id}`).result()).resolves.toEqual({ delivered: false, attempts: -1 });
    expect(listed.body.data.map((a: any) => [a.attempt, a.status, a.delivered, a.error])).toEqual([[1, null, false, 'refused: not a public address (loopback)']]);
    expect(receiver.received).toHaveLength(0);
  });

  it('an allowlisted name is called over http at the address its lookup checked', async () => {
    const { key } = await newKey(fx.gw);
    const created = await submit(key, `http://hooks.internal.test:${new URL(receiver.url).port}/hooks/video`);
    expect(created.status).toBe(200);
    const id = created.body.id;
    const got = await until(() => receiver.received.find((r) => r.headers['webhook-id'] === `msg_${id}`), 'the allowlisted delivery');
    expect(got.headers.host).toBe(`hooks.internal.test:${new URL(receiver.url).port}`);
    expect(JSON.parse(got.body)).toMatchObject({ id, status: 'completed' });
  });
});
