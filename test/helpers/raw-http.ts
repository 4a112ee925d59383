import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type RawOutcome = { ok: true; response: RawResponse } | { ok: false; reason: string; received: string };

/** Parses the first final (non-1xx) response in `buf`; null while incomplete. */
export function parseResponse(buf: Buffer, opts: { head?: boolean; closed?: boolean; switching?: boolean } = {}): RawResponse | null {
  let offset = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', offset);
    if (end < 0) return null;
    const lines = buf.subarray(offset, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1]);
    if (!status) throw new Error(`not an HTTP response: ${JSON.stringify(lines[0])}`);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const bodyStart = end + 4;
    // A 101 ends the HTTP exchange when the request asked to switch protocols.
    if (status === 101 && opts.switching) return { status, headers, body: '' };
    if (status < 200) {
      offset = bodyStart;
      continue;
    }
    if (opts.head || status === 204 || status === 304) return { status, headers, body: '' };
    if (headers['transfer-encoding'] === 'chunked') {
      let pos = bodyStart;
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', pos);
        if (lineEnd < 0) return null;
        const size = parseInt(buf.subarray(pos, lineEnd).toString('latin1'), 16);
        if (size === 0) return buf.indexOf('\r\n', lineEnd + 2) < 0 ? null : { status, headers, body: Buffer.concat(parts).toString('utf8') };
        if (buf.length < lineEnd + 2 + size + 2) return null;
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        pos = lineEnd + 2 + size + 2;
      }
    }
    const length = Number(headers['content-length'] ?? NaN);
    // A body without either ends with the connection (RFC 9112 §6.3), as a stream sent to an HTTP/1.0 client does.
    if (Number.isNaN(length) && headers.connection?.toLowerCase() === 'close') {
      return opts.closed ? { status, headers, body: buf.subarray(bodyStart).toString('utf8') } : null;
    }
    if (Number.isNaN(length)) throw new Error('response without content-length or chunked body');
    if (buf.length < bodyStart + length) return null;
    return { status, headers, body: buf.subarray(bodyStart, bodyStart + length).toString('utf8') };
  }
}

/**
 * Sends raw bytes on a fresh connection and waits for one complete HTTP response. `halfClose` ends our side
 * after writing (a truncated body then reaches the server as end of input). A connection that closes or fails
 * before a complete response arrived is reported as dropped, never thrown.
 */
export function rawRequest(
  port: number,
  payload: Buffer,
  opts: { halfClose?: boolean; head?: boolean; timeoutMs?: number; switching?: boolean } = {},
): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (outcome: RawOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const received = () => Buffer.concat(chunks);
    const tryParse = (closed = false) => {
      try {
        const response = parseResponse(received(), { head: opts.head, closed, switching: opts.switching });
        if (response) finish({ ok: true, response });
      } catch (err) {
        finish({ ok: false, reason: (err as Error).message, received: received().toString('latin1').slice(0, 300) });
      }
    };
    const timer = setTimeout(
      () => finish({ ok: false, reason: 'timeout', received: received().toString('latin1').slice(0, 300) }),
      opts.timeoutMs ?? 15_000,
    );
    socket.on('data', (c) => {
      chunks.push(c);
      tryParse();
    });
    // An error while writing (EPIPE, ECONNRESET) is only a drop if no complete response arrived.
    socket.on('error', (err) => {
      tryParse();
      finish({ ok: false, reason: `socket error ${(err as NodeJS.ErrnoException).code}`, received: received().toString('latin1').slice(0, 300) });
    });
    socket.on('close', () => {
      tryParse(true);
      finish({ ok: false, reason: 'closed before a complete response', received: received().toString('latin1').slice(0, 300) });
    });
    socket.on('connect', () => {
      socket.write(payload);
      if (opts.halfClose) socket.end();
    });
  });
}

/** A request as bytes will carry it, so it can be truly malformed. */
export interface RawReq {
  method: string;
  target: string;
  version: string;
  headers: Array<[string, string | Buffer]>;
  body: Buffer | null;
  /** Content-Length to declare instead of the body's length (a truncated body). */
  declaredLength?: number;
  chunked?: boolean;
  halfClose?: boolean;
  /** Bytes sent instead of the serialized request line (for byte-level mutations of it). */
  requestLine?: Buffer;
}

export function serialize(req: RawReq): Buffer {
  const parts: Buffer[] = [req.requestLine ?? Buffer.from(`${req.method} ${req.target} ${req.version}`, 'latin1'), Buffer.from('\r\n')];
  const headers = [...req.headers];
  if (req.body && req.chunked) headers.push(['Transfer-Encoding', 'chunked']);
  else if (req.body || req.declaredLength !== undefined) headers.push(['Content-Length', String(req.declaredLength ?? req.body!.length)]);
  for (const [name, value] of headers) {
    parts.push(Buffer.from(`${name}: `, 'latin1'), Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1'), Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('\r\n'));
  if (req.body && req.chunked) {
    for (let i = 0; i < req.body.length; i += 64 * 1024) {
      const piece = req.body.subarray(i, i + 64 * 1024);
      parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
    }
    parts.push(Buffer.from('0\r\n\r\n'));
  } else if (req.body) {
    parts.push(req.body);
  }
  return Buffer.concat(parts);
}
