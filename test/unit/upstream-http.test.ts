import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpstreamError } from '../../src/domain/ports/upstream-error';
import { readAll, sendUpstream } from '../../src/upstream/http';
import { CallAbort, type CallSignal } from '../../src/domain/ports/call-signal';

/**
 * Reading an upstream's whole answer (readAll), off the message's events: the bytes, or an UpstreamError for a body
 * cut short, too large, or silent, as iterating its body gives them.
 */

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let server: http.Server;
let handler: Handler;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const call = (timeoutMs = 2_000, signal: CallSignal = new AbortController().signal) => sendUpstream({ url: `${base}/x`, method: 'GET', headers: {}, timeoutMs, signal });

describe('readAll', () => {
  it('returns the whole body, in several chunks', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-length': '10' });
      res.write('hello');
      setTimeout(() => res.end('world'), 20);
    };
    expect((await readAll(await call())).toString()).toBe('helloworld');
  });

  it('a body cut short is a protocol error', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('part');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    await expect(readAll(await call())).rejects.toMatchObject({ kind: 'protocol' });
  });

  it('a body over the limit is a protocol error and the connection is dropped', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.end('x'.repeat(1000));
    };
    const err = await readAll(await call(), 100).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ kind: 'protocol', message: 'the upstream answer is too large' });
  });

  it('silence mid-body longer than the timeout is a timeout', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('part');
    };
    await expect(readAll(await call(100))).rejects.toMatchObject({ kind: 'timeout' });
  });
});

describe('a call whose client went away (CallAbort)', () => {
  it('aborting before the answer fails the call as aborted and closes the upstream connection', async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    handler = (req) => req.socket.once('close', upstreamClosed);
    const gone = new CallAbort();
    const pending = call(5_000, gone);
    setTimeout(() => gone.abort(), 50);
    await expect(pending).rejects.toMatchObject({ kind: 'aborted' });
    await closed;
  });

  it('already aborted: no request is sent', async () => {
    let requests = 0;
    handler = (_req, res) => {
      requests++;
      res.end('{}');
    };
    const gone = new CallAbort();
    gone.abort();
    await expect(call(5_000, gone)).rejects.toMatchObject({ kind: 'aborted' });
    expect(requests).toBe(0);
  });
});

describe('CallAbort', () => {
  it('runs each listener once, in order; not one removed, nor one added after the abort', () => {
    const gone = new CallAbort();
    const ran: string[] = [];
    const removed = () => ran.push('removed');
    gone.addEventListener('abort', () => ran.push('a'));
    gone.addEventListener('abort', removed);
    gone.addEventListener('abort', () => ran.push('b'));
    gone.removeEventListener('abort', removed);
    expect(gone.aborted).toBe(false);
    gone.abort();
    gone.abort();
    gone.addEventListener('abort', () => ran.push('late'));
    expect(gone.aborted).toBe(true);
    expect(ran).toEqual(['a', 'b']);
  });
});
