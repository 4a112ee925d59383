import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import fp from 'fastify-plugin';
import { Family, formatError, guessFamily } from '../../schemas/error-families';
import { familyOf } from '../errors/route-family';
import { toWireError } from '../../schemas/wire-error';
import { newRequestId } from './request-id';

/** How long a socket we answered may stay half-closed, still reading what the client sends, before it is destroyed. */
const LINGER_MS = 10_000;

// Requests Fastify has routed, so an error in the rest of their body answers with their id and family.
const routed = new WeakMap<IncomingMessage, { requestId: string; family: Family }>();

// Node emits 'clientError' again for every later chunk once its parser failed; answer only the first.
const answered = new WeakSet<Socket>();

/** The request target of the request line at the start of a raw packet, if there is one. */
function targetOf(rawPacket: unknown): string {
  if (!Buffer.isBuffer(rawPacket)) return '/';
  // Whatever the method is (it may be the malformed part), the target is the second field of the first line.
  const line = /^[^ \r\n]* +([^ \r\n]+)/.exec(rawPacket.subarray(0, 8192).toString('latin1'));
  return line ? line[1] : '/';
}

/**
 * Writes one complete HTTP/1.1 error response in the family's format, then closes our side while still reading
 * what the client sends (destroying a socket with unread input makes the kernel send a reset, and the client
 * can lose the answer). The socket is destroyed once the client closes, or after LINGER_MS.
 */
export function answerRaw(
  socket: Socket,
  log: FastifyBaseLogger,
  failure: unknown,
  to: { family: Family; requestId?: string },
  extraHeaders: string[] = [],
) {
  const requestId = to.requestId ?? newRequestId();
  const wire = toWireError(failure);
  const body = JSON.stringify(formatError(to.family, wire, { requestId }));
  const head = [
    `HTTP/1.1 ${wire.status} ${STATUS_CODES[wire.status] ?? 'Error'}`,
    `x-request-id: ${requestId}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    ...extraHeaders,
    `date: ${new Date().toUTCString()}`,
    'connection: close',
  ];
  log.info({ request_id: requestId, status: wire.status, reason: (failure as { code?: string }).code }, 'request rejected before routing');
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

/**
 * Fastify's `clientErrorHandler`: Node's parser rejected the request (headers over 16 KB, control bytes in a
 * header, an unknown method, a malformed URL) so it never reached routing. Answers in the family guessed from the
 * request line, with x-request-id, instead of Fastify's default body.
 */
export function handleClientError(this: { log: FastifyBaseLogger }, err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
  answered.add(socket);
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  // When the in-flight request is itself incomplete, the error is in its body and this is its answer.
  const own = inFlight && !inFlight.writableFinished && !inFlight.req?.complete ? routed.get(inFlight.req) : undefined;
  const to = own ?? { family: guessFamily(targetOf(err.rawPacket)) };
  const write = () => {
    if (socket.writable) answerRaw(socket, this.log, err, to);
    else socket.destroy();
  };
  // A response still in flight on this socket (the client sent garbage after a complete request) goes out first;
  // one already half-written cannot be followed by another, so the socket is closed as Node would.
  if (inFlight && !inFlight.writableFinished && inFlight.req?.complete) {
    if (inFlight.headersSent) socket.destroy();
    else inFlight.once('finish', write);
    return;
  }
  write();
}

/** CONNECT never reaches Fastify (Node closes the connection unanswered without a 'connect' listener): refuse it. */
export function handleConnect(log: FastifyBaseLogger) {
  return (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => undefined);
    socket.resume();
    const to = { family: guessFamily(req.url ?? '/') };
    answerRaw(socket, log, { code: 'CONNECT_NOT_SUPPORTED' }, to, ['allow: GET, HEAD, POST, PUT, DELETE']);
  };
}

/**
 * CONNECT is refused here. A client that closes its sending side after its request (a half-close) still gets the
 * answer (Node would abort the request in flight and close). A request with an `Expect` Node does not know (not 100-continue) goes to Fastify like
 * any other, whose request guards answer 417 in the family's format (Node would answer an empty 417 itself).
 */
export function installConnectionErrorHandlers(server: Server, log: FastifyBaseLogger) {
  server.on('connect', handleConnect(log));
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
}

/** Remembers each routed request's id and family until it completes, for errors Node reports on its body. */
export const connectionErrorsPlugin = fp(async (app) => {
  app.addHook('onRequest', (request, _reply, done) => {
    routed.set(request.raw, { requestId: request.id, family: familyOf(request) });
    done();
  });
});
