// test modes: postgres, embedded
import { request as httpRequest } from 'node:http';
import net from 'node:net';
import { http, startGateway, TestGateway } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { waitFor } from '../helpers/wait';

// Every request's work is bounded on what is actually read: a multipart body without a Content-Length is held to
// the multipart limit, a body that trickles in is cut off, and connections are capped.

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const MIB = 1024 * 1024;

/** A multipart edit form of `files` PNG-headed files of `size` bytes each. */
function editForm(files: number, size: number): { boundary: string; parts: Buffer[] } {
  const boundary = 'gatewaytestboundary';
  const parts: Buffer[] = [];
  const field = (name: string, value: string) => Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  parts.push(field('model', 'gpt-image-1'), field('prompt', 'add a hat'));
  for (let i = 0; i < files; i++) {
    const data = Buffer.alloc(size, 7);
    PNG.copy(data);
    parts.push(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="image[]"; filename="i${i}.png"\r\ncontent-type: image/png\r\n\r\n`), data, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { boundary, parts };
}

/** POSTs the parts one write each, chunked (no Content-Length) unless `declare` is set. */
function postChunked(baseUrl: string, key: string, form: { boundary: string; parts: Buffer[] }, declare = false) {
  return new Promise<{ status: number; body: any; requestId: string | undefined }>((resolve, reject) => {
    const length = form.parts.reduce((n, p) => n + p.length, 0);
    const req = httpRequest(
      `${baseUrl}/v1/images/edits`,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': `multipart/form-data; boundary=${form.boundary}`,
          ...(declare ? { 'content-length': String(length) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString() || 'null'), requestId: res.headers['x-request-id'] as string }));
      },
    );
    req.on('error', reject);
    (async () => {
      for (const p of form.parts) if (!req.write(p)) await new Promise((r) => req.once('drain', r));
      req.end();
    })().catch(() => undefined);
  });
}

describe('bounded requests: multipart bytes and the request deadline', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // The deadline leaves the first test's 1.8 MB upload room on a loaded machine (at 1.5 s it was cut short by a 408).
    gw = await startGateway({ limits: { multipartLimitBytes: 1 * MIB, requestTimeoutMs: 4000 } });
  });
  afterAll(async () => {
    await gw.close();
  });

  const editsUpstream = () => gw.simulator!.requests.filter((r) => r.path.endsWith('/images/edits')).length;

  it('a chunked multipart body over the limit is a 413 in the OpenAI format, never forwarded or billed', async () => {
    const { key, record } = await newKey(gw);
    const before = editsUpstream();
    // 3 x 600 KiB: each file is under the limit, together they are not.
    const res = await postChunked(gw.baseUrl, key, editForm(3, 600 * 1024));
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'payload_too_large', type: 'invalid_request_error' });
    expect(res.requestId).toMatch(/^req_/);
    // One file bigger than the whole limit, chunked too.
    const one = await postChunked(gw.baseUrl, key, editForm(1, 2 * MIB));
    expect([one.status, one.body.error.code]).toEqual([413, 'payload_too_large']);
    expect(editsUpstream()).toBe(before);
    const ledger = await gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE token_id = $1', [record.id]);
    expect(ledger.rows[0].n).toBe(0);
  });

  it('a declared Content-Length over the multipart limit is refused before the body is read; within it, the edit goes through', async () => {
    const { key } = await newKey(gw);
    const declared = await postChunked(gw.baseUrl, key, editForm(2, 600 * 1024), true);
    expect([declared.status, declared.body.error.code]).toEqual([413, 'payload_too_large']);
    const fits = await postChunked(gw.baseUrl, key, editForm(2, 300 * 1024));
    expect(fits.status).toBe(200);
    expect(fits.body.data).toHaveLength(1);
  });

  it('a body that trickles in past the request deadline gets 408 in its family format and the connection closes', async () => {
    const { key } = await newKey(gw);
    const { port } = new URL(gw.baseUrl);
    const socket = net.connect(Number(port), '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (c) => received.push(c));
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{`);
    const started = Date.now();
    const trickle = setInterval(() => socket.writable && socket.write(' '), 200);
    await closed;
    clearInterval(trickle);
    const elapsed = Date.now() - started;
    const text = Buffer.concat(received).toString();
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/x-request-id: req_/);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).error).toMatchObject({ code: 'request_timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(3900);
    expect(elapsed).toBeLessThan(15_000);
    // The server is fine afterwards.
    expect((await http(gw.baseUrl, 'GET', '/healthz')).status).toBe(200);
  });
});

describe('bounded requests: the connection cap', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ limits: { maxConnections: 3 } });
  });
  afterAll(async () => {
    await gw.close();
  });

  const open = (port: number) =>
    new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.on('error', reject);
    });
  /** One request on a socket of its own; null when the server closed it unanswered. */
  const ask = (s: net.Socket) =>
    new Promise<string | null>((resolve) => {
      const got: Buffer[] = [];
      s.on('data', (c) => {
        got.push(c);
        if (Buffer.concat(got).includes('\r\n\r\n')) resolve(Buffer.concat(got).toString());
      });
      s.on('close', () => resolve(got.length ? Buffer.concat(got).toString() : null));
      s.on('error', () => undefined);
      s.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
    });

  it('closes connections beyond GATEWAY_MAX_CONNECTIONS on arrival and admits again once one ends', async () => {
    const port = Number(new URL(gw.baseUrl).port);
    const held = [await open(port), await open(port), await open(port)];
    for (const s of held) expect(await ask(s)).toMatch(/^HTTP\/1\.1 200 /);
    const extra = await open(port);
    expect(await ask(extra)).toBeNull();
    held[0].destroy();
    // The slot is free once the server has seen that close: until then a new connection is closed unanswered.
    const again = await waitFor(
      async () => {
        const s = await open(port);
        if (/^HTTP\/1\.1 200 /.test((await ask(s)) ?? '')) return s;
        s.destroy();
        return null;
      },
      { message: 'a connection to be admitted after one of the 3 ended' },
    );
    for (const s of [...held, again]) s.destroy();
  });
});
