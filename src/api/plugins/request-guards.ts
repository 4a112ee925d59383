import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { PayloadTooLargeError, ValidationError } from '../../domain/errors';

/** After a 413, how long the rest of the refused body may keep arriving (and be discarded) before the socket is closed. */
const DRAIN_MS = 10_000;

/**
 * Checks made before authentication and body parsing, so they answer in the route's family like any other error:
 *
 * - HTTP/1.1 requires a Host header (Node's own check answers an empty 400; it is switched off in buildApp).
 * - A declared Content-Length over the route's body limit is a 413 at once, before anything is read.
 * - An `Expect` other than 100-continue is a 417 (Node would answer it with an empty 417; connection-errors.ts
 *   routes such requests here instead).
 * - A request that asks for a protocol upgrade (`Connection: Upgrade`) and has a body is a 400: Node's parser
 *   hands everything after such a request's headers to the (absent) upgrade handler, so its body never arrives
 *   and the request would wait forever. Upgrade requests without a body are answered as usual.
 *
 * A 413 is sent without `connection: close`, and Node discards the rest of the body: a client that sends the
 * whole body before reading (no `Expect: 100-continue`) then reads the 413 instead of losing the connection
 * (closing a socket with unread input resets it). The draining is bounded by DRAIN_MS.
 */
export const requestGuardsPlugin = fp(async (app) => {
  // Callback hooks, not async ones: no promise per request on the hot path.
  app.addHook('onRequest', (request, reply, done) => {
    done(guardProblem(request, reply));
  });

  app.addHook('onResponse', (request, _reply, done) => {
    if (request.method !== 'CONNECT') endUpgradeSocket(request.raw);
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode === 413 && !request.raw.complete) {
      // Fastify's body reader asks for a close when it gives up mid-body; draining instead lets the answer arrive.
      reply.removeHeader('connection');
      const { raw } = request;
      setTimeout(() => {
        if (!raw.complete) raw.socket?.destroy();
      }, DRAIN_MS).unref();
    }
    done(null, payload);
  });
});

/** What the checks above refuse a request for, or undefined when it may go on. */
function guardProblem(request: FastifyRequest, reply: FastifyReply): Error | undefined {
  const raw = request.raw;
  if (raw.httpVersion === '1.1' && raw.headers.host === undefined) {
    return new ValidationError('The Host header is required');
  }
  const expect = raw.headers.expect;
  if (expect !== undefined && !/(?:^|\W)100-continue(?:$|\W)/i.test(expect)) {
    return Object.assign(new Error('Only "Expect: 100-continue" is supported'), { statusCode: 417 });
  }
  const declared = Number(raw.headers['content-length']);
  const hasBody = declared > 0 || raw.headers['transfer-encoding'] !== undefined;
  if (hasBody && raw.headers.upgrade !== undefined && /(?:^|,)\s*upgrade\s*(?:,|$)/i.test(raw.headers.connection ?? '')) {
    reply.header('connection', 'close');
    return new ValidationError('Protocol upgrades are not supported on requests with a body');
  }
  if (declared > request.routeOptions.bodyLimit) return new PayloadTooLargeError('The request body is too large');
  return undefined;
}

/**
 * Once a WebSocket route exists, Node hands every request with `Connection: Upgrade` over as an upgrade: no HTTP
 * parser is left on its socket (paused, so not even the client's close is noticed), and nothing reads a next request.
 * Answered over HTTP (not upgraded), such a socket is ended: whatever body came with it is read and dropped. Called
 * once the answer was sent, by the onResponse hook and by the answer to a request that failed before routing.
 */
export function endUpgradeSocket(raw: IncomingMessage): void {
  // `upgrade` is set by Node's HTTP server on such requests (not in @types/node's IncomingMessage).
  if (!(raw as { upgrade?: boolean }).upgrade) return;
  const socket = raw.socket;
  socket.resume();
  socket.end();
  setTimeout(() => socket.destroy(), DRAIN_MS).unref();
}
