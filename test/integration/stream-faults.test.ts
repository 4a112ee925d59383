// test modes: postgres, embedded
import net from 'node:net';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLocalObjectStore } from '../../src/stores/local-store';
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';
import { rawRequest, type RawResponse } from '../helpers/raw-http';
import { recordEscapedErrors } from '../helpers/escaped-errors';
import { waitFor } from '../helpers/wait';
import { multipartRoutes, type UploadRoute } from '../helpers/openapi-routes';
import { wireErrorProblems } from '../helpers/wire-errors';

/**
 * One bad upload must never stop the gateway: a multipart body cut off inside its file part, one whose connection
 * ends early, one aborted mid-file and one that trickles in are each that request's fault alone. Every multipart
 * route of the OpenAPI document is tried (a route added later is covered without being named here); after each,
 * the gateway still answers, and nothing of a refused upload is kept.
 */
describe('stream faults: truncated, aborted and trickled uploads on every multipart route', () => {
  let gw: TestGateway;
  let port: number;
  let apiKey: string;
  let routes: UploadRoute[];

  let storeDir: string;
  const escaped = recordEscapedErrors();

  beforeAll(async () => {
    storeDir = await mkdtemp(path.join(os.tmpdir(), 'stream-faults-'));
    // A store of the test's own, empty: its first upload is the one that waits for the store's folder to be made.
    gw = await startGateway({ videoStore: createLocalObjectStore(storeDir) });
    port = Number(new URL(gw.baseUrl).port);
    const acct = await newAccount(gw.db);
    const key = await http(gw.baseUrl, 'POST', '/api/token/', { auth: acct.systemToken, body: { name: 'uploads', unlimited_quota: true } });
    apiKey = `sk-${key.body.data.key}`;
    routes = multipartRoutes((await http(gw.baseUrl, 'GET', '/openapi.json')).body);
  });
  afterAll(async () => {
    await gw?.close();
    await rm(storeDir, { recursive: true, force: true });
    escaped.stop();
  });
  afterEach(() => {
    expect(escaped.errors.map(String)).toEqual([]);
  });

  const BOUNDARY = '----gatewayfuzz7MA4YWxkTrZu0gW';

  /** The text fields first (so a route gets as far as its file), then the file part, whose content is cut off. */
  function form(route: UploadRoute, fileBytes: Buffer, opts: { close: boolean }): Buffer {
    const parts: Buffer[] = [];
    for (const [name, value] of Object.entries(route.textFields)) {
      parts.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
    }
    parts.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${route.fileField}"; filename="x.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`));
    parts.push(fileBytes);
    if (opts.close) parts.push(Buffer.from(`\r\n--${BOUNDARY}--\r\n`));
    return Buffer.concat(parts);
  }

  function head(route: UploadRoute, length: number): Buffer {
    return Buffer.from(
      `POST ${route.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${apiKey}\r\n` +
        `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${length}\r\n\r\n`,
    );
  }

  const payload = Buffer.from('{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}\n'.repeat(2000));

  function expectFamilyError(res: RawResponse, target: string, status: number) {
    expect({ target, status: res.status }).toEqual({ target, status });
    expect(wireErrorProblems(res, target)).toEqual([]);
  }

  async function gatewayAnswers() {
    const models = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${apiKey}` });
    expect(models.status).toBe(200);
  }

  /** No file recorded, no bytes left in the store; waited for, since a refused request may be answered before its handler has cleaned up. */
  const nothingKept = () => waitFor(async () => {
    const files = await http(gw.baseUrl, 'GET', '/v1/files', { auth: `Bearer ${apiKey}` });
    expect(files.body.data).toEqual([]);
    expect(await readdir(path.join(storeDir, 'batch-files')).catch(() => [])).toEqual([]);
    return true;
  }, { message: 'no upload kept' });

  it('an error nobody foresaw ends its own request: a 500 in the family format with x-request-id, logged and counted', async () => {
    const catalog = gw.deps.catalog;
    const current = catalog.current;
    catalog.current = () => {
      throw new TypeError("Cannot read properties of undefined (reading 'models')");
    };
    try {
      const res = await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${apiKey}` });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: { message: expect.any(String), type: 'server_error', param: null, code: expect.any(String) } });
      const id = res.headers.get('x-request-id');
      expect(id).toMatch(/^req_[0-9a-f]{32}$/);
      expect(gw.logs.text()).toContain(id);
    } finally {
      catalog.current = current;
    }
    const metrics = await fetch(`${gw.baseUrl}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/gateway_unexpected_errors_total\{route="\/v1\/models"\} [1-9]/);
    await gatewayAnswers();
  });

  it('finds every upload route in the OpenAPI document', () => {
    expect(routes.map((r) => r.path).sort()).toEqual(expect.arrayContaining(['/v1/audio/transcriptions', '/v1/audio/translations', '/v1/files', '/v1/images/edits', '/v1/videos']));
  });

  it('a body cut off inside its file part (no closing boundary): 400 in the family format, and the gateway goes on', async () => {
    for (const route of routes) {
      const body = form(route, payload.subarray(0, 70_000), { close: false });
      // Twice: the defect answered nothing to the first and ended the process on the second.
      for (let i = 0; i < 2; i++) {
        const out = await rawRequest(port, Buffer.concat([head(route, body.length), body]), { timeoutMs: 10_000 });
        if (!out.ok) throw new Error(`${route.path}: ${out.reason}`);
        expectFamilyError(out.response, route.path, 400);
      }
      await gatewayAnswers();
    }
    await nothingKept();
  });

  it('a connection that ends before the declared length: 400 in the family format', async () => {
    for (const route of routes) {
      const body = form(route, payload.subarray(0, 50_000), { close: true });
      const out = await rawRequest(port, Buffer.concat([head(route, body.length + 100_000), body]), { halfClose: true, timeoutMs: 10_000 });
      if (!out.ok) throw new Error(`${route.path}: ${out.reason}`);
      expectFamilyError(out.response, route.path, 400);
      await gatewayAnswers();
    }
    await nothingKept();
  });

  it('a connection destroyed mid-file, at once or after a while: nothing kept, the gateway goes on', async () => {
    for (const route of routes) {
      for (const waitMs of [0, 5, 50]) {
        const body = form(route, payload, { close: true });
        await new Promise<void>((resolve) => {
          const socket = net.connect(port, '127.0.0.1', () => {
            socket.write(head(route, body.length));
            socket.write(body.subarray(0, 40_000));
            setTimeout(() => socket.destroy(), waitMs);
          });
          socket.on('error', () => undefined);
          socket.on('close', () => resolve());
        });
      }
      await gatewayAnswers();
    }
    await nothingKept();
  });

  it('a body that trickles in and then stops short: answered, never a 5xx', async () => {
    for (const route of routes) {
      const body = form(route, payload.subarray(0, 3_000), { close: false });
      const res = await new Promise<string>((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        const chunks: Buffer[] = [];
        socket.on('data', (c) => chunks.push(c));
        socket.on('error', () => undefined);
        socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
        socket.on('connect', async () => {
          socket.write(head(route, body.length + 10));
          for (let i = 0; i < body.length; i += 500) {
            socket.write(body.subarray(i, i + 500));
            await new Promise((r) => setTimeout(r, 10));
          }
          socket.end();
        });
      });
      expect({ path: route.path, status: Number(/^HTTP\/1\.1 (\d{3})/.exec(res)?.[1]) }).toEqual({ path: route.path, status: 400 });
      expect(res).toMatch(/\r\nx-request-id: req_[0-9a-f]{32}\r\n/i);
      await gatewayAnswers();
    }
    await nothingKept();
  });
});
