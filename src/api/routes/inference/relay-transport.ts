import { SECURITY_HEADERS } from '../../plugins/security-headers';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ByteSink, CallTiming, NamedEventSink, RelayCaller, StreamSink } from '../../../domain/relay/caller';
import { relayHeaders } from '../../plugins/server-timing';
import { CallAbort } from '../../../domain/ports/call-signal';
import { withFields } from '../../../with-fields';

/**
 * What the relay needs of an HTTP exchange: the caller (key, request id, a signal that fires when the
 * client disconnects before the answer was written) and, for streams, an SSE sink writing straight to the
 * socket (no buffering: one write per chunk, Nagle off on Node's server sockets).
 */
/**
 * The client's query string to pass upstream (`?beta=true`, `?limit=5`), without the `?`: only a plain one (at most
 * 512 characters of letters, digits and `._~%=&+-`); anything else is not ours to pass on, and is dropped.
 */
export function forwardedQuery(request: FastifyRequest): string | undefined {
  const q = request.url.indexOf('?');
  const query = q >= 0 ? request.url.slice(q + 1) : '';
  return query !== '' && query.length <= 512 && /^[A-Za-z0-9._~%=&+-]+$/.test(query) ? query : undefined;
}

export function callerOf(request: FastifyRequest, reply: FastifyReply): RelayCaller {
  const gone = new CallAbort();
  const timing: CallTiming = {};
  request.relayTiming = timing;
  const droppedTools = new Set<string>();
  request.relayDroppedTools = droppedTools;
  const raw = reply.raw;
  // A client gone while the request was authenticated, admitted or parsed closed before this listener.
  if (raw.destroyed && !raw.writableFinished) gone.abort();
  else
    raw.once('close', () => {
      if (!raw.writableFinished) gone.abort();
    });
  return { key: request.apiKey, requestId: request.id, signal: gone, log: request.log, onBilledTokens: request.keyAdmission?.billedTokens, period: request.keyPeriod, timing, droppedTools };
}

const SSE_HEADERS = {
  ...SECURITY_HEADERS,
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/**
 * An SSE response written straight to the socket: `write` returns false once the client is gone, and waits for
 * 'drain' when the socket's buffer is full (backpressure) instead of buffering in memory.
 */
export function sseWriter(request: FastifyRequest, reply: FastifyReply) {
  const raw = reply.raw;
  return {
    start() {
      reply.hijack();
      raw.writeHead(200, withFields(SSE_HEADERS, { 'x-request-id': request.id, ...relayHeaders(request, reply.elapsedTime) }));
    },
    write: (text: string) => writeOrWait(raw, text),
    end() {
      if (!raw.writableEnded) raw.end();
    },
  };
}

/** Named SSE events (`event: <name>\ndata: <json>\n\n`) written straight to the socket (Messages, Responses). */
export function namedSseSink(request: FastifyRequest, reply: FastifyReply): NamedEventSink {
  const sse = sseWriter(request, reply);
  return { start: sse.start, send: (event, data) => sse.write(`event: ${event}\ndata: ${data}\n\n`), end: sse.end };
}

/**
 * A streamed JSON array (`[chunk,\r\nchunk]`): what the Gemini API streams when the client did not ask for SSE.
 * The closing `]` goes out at the end, whether the stream completed or failed.
 */
export function jsonArraySink(request: FastifyRequest, reply: FastifyReply): StreamSink {
  const raw = reply.raw;
  let first = true;
  return {
    start() {
      reply.hijack();
      raw.writeHead(200, withFields(SECURITY_HEADERS, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': request.id, ...relayHeaders(request, reply.elapsedTime) }));
    },
    send(payload) {
      const text = first ? `[${payload}` : `,\r\n${payload}`;
      first = false;
      return writeOrWait(raw, text);
    },
    end() {
      if (raw.writableEnded) return;
      raw.end(first ? '[]' : ']');
    },
  };
}

/** `data: <chunk>` lines of the chat completions stream. */
export function sseSink(request: FastifyRequest, reply: FastifyReply): StreamSink {
  const sse = sseWriter(request, reply);
  return { start: sse.start, send: (payload) => sse.write(`data: ${payload}\n\n`), end: sse.end };
}

/** The bytes of a stream as they came (audio, or SSE relayed whole), with the upstream's Content-Type. */
export function byteSink(request: FastifyRequest, reply: FastifyReply): ByteSink {
  const raw = reply.raw;
  let type = 'application/octet-stream';
  return {
    contentType(t) {
      type = t;
    },
    start() {
      reply.hijack();
      const sse = type.startsWith('text/event-stream');
      raw.writeHead(200, withFields(SECURITY_HEADERS, {
        'content-type': type,
        'cache-control': 'no-cache',
        ...(sse && { connection: 'keep-alive', 'x-accel-buffering': 'no' }),
        'x-request-id': request.id,
        ...relayHeaders(request, reply.elapsedTime),
      }));
    },
    write: (data) => writeOrWait(raw, data),
    end() {
      if (!raw.writableEnded) raw.end();
    },
  };
}

/** One write to the socket; when its buffer is full, waits for 'drain' (true) or the client gone (false). */
function writeOrWait(raw: FastifyReply['raw'], data: string | Buffer): boolean | Promise<boolean> {
  if (raw.destroyed || raw.writableEnded) return false;
  if (raw.write(data)) return true;
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      raw.off('drain', onDrain);
      raw.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    raw.on('drain', onDrain);
    raw.on('close', onClose);
  });
}
