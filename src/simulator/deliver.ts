import type { ServerResponse } from 'node:http';
import type { ActiveFault } from './faults';
import type { Reply } from './types';

/** What writing a reply needs from the server: pacing, and an abortable sleep that close() ends. */
export interface Pacing {
  latencyMs: number;
  chunkDelayMs: number;
  sleep(ms: number): Promise<void>;
  /** True once the simulator is closing: stop writing. */
  closed(): boolean;
}

/** Chunks written before a mid-stream fault strikes (fewer when the reply has fewer). */
const CHUNKS_BEFORE_FAULT = 2;

/**
 * Writes a reply. The fast path (no latency, no fault, no chunk delay) is one synchronous
 * writeHead + end: a stream then goes out in one write, which SSE clients cannot tell apart.
 * With `chunkDelayMs`, every stream chunk is written (and flushed: Nagle is off) as its own write.
 */
export function deliver(res: ServerResponse, reply: Reply, p: Pacing, fault?: ActiveFault): void | Promise<void> {
  if (p.latencyMs <= 0 && !fault && (!reply.stream || p.chunkDelayMs <= 0)) {
    writeWhole(res, reply);
    return;
  }
  return deliverSlowly(res, reply, p, fault);
}

/** The pieces as one body; binary pieces (audio) must not go through string joining. */
function whole(pieces: Array<string | Buffer>): string | Buffer {
  if (pieces.length === 1) return pieces[0];
  if (pieces.every((p) => typeof p === 'string')) return pieces.join('');
  return Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
}

function writeWhole(res: ServerResponse, reply: Reply): void {
  const body = whole(reply.pieces);
  if (!reply.stream) reply.headers['content-length'] = Buffer.byteLength(body);
  res.writeHead(reply.status, reply.headers);
  res.end(body);
}

function gone(res: ServerResponse, p: Pacing): boolean {
  return p.closed() || res.destroyed;
}

async function deliverSlowly(res: ServerResponse, reply: Reply, p: Pacing, fault?: ActiveFault): Promise<void> {
  res.on('error', () => {});
  if (p.latencyMs > 0) await p.sleep(p.latencyMs);
  if (gone(res, p)) return;
  const midStream = fault?.kind === 'reset-mid-stream' || fault?.kind === 'stall-mid-stream';
  if (!midStream) {
    if (!reply.stream || p.chunkDelayMs <= 0) return writeWhole(res, reply);
    res.writeHead(reply.status, reply.headers);
    for (let i = 0; i < reply.pieces.length; i++) {
      if (i > 0 && p.chunkDelayMs > 0) await p.sleep(p.chunkDelayMs);
      if (gone(res, p)) return;
      res.write(reply.pieces[i]);
    }
    res.end();
    return;
  }

  // Mid-stream fault: headers and the first chunks (or the first half of a plain body), then reset or stall.
  let partial: Array<string | Buffer>;
  if (reply.stream) {
    partial = reply.pieces.slice(0, Math.max(1, Math.min(CHUNKS_BEFORE_FAULT, reply.pieces.length - 1)));
  } else {
    const body = Buffer.from(whole(reply.pieces));
    reply.headers['content-length'] = body.length;
    partial = [body.subarray(0, body.length >> 1)];
  }
  res.writeHead(reply.status, reply.headers);
  for (let i = 0; i < partial.length; i++) {
    if (i > 0 && p.chunkDelayMs > 0) await p.sleep(p.chunkDelayMs);
    if (gone(res, p)) return;
    await new Promise<void>((resolve) => res.write(partial[i], () => resolve()));
  }
  if (fault?.kind === 'stall-mid-stream') return; // never finishes; close() ends the connection
  // Let the client read what was sent before the reset discards the connection.
  await p.sleep(Math.max(5, p.chunkDelayMs));
  if (!res.socket?.destroyed) res.socket?.resetAndDestroy();
}
