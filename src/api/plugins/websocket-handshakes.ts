import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ValidationError } from '../../domain/errors';
import { familyOf } from '../errors/route-family';
import { handshakeProblem } from '../websocket-handshake';
import { answerRaw } from './connection-errors';
import type { Family } from '../../schemas/error-families';

// The handshake of a WebSocket route, answered by the gateway: refusals in the route's family with x-request-id,
// and the 101 carrying x-request-id too.

/** The request id and family of an upgrade request that reached its route, for the 101 and the backstop. */
const upgrades = new WeakMap<IncomingMessage, { requestId: string; family: Family }>();

/** preHandler of a WebSocket route: refuses an upgrade `ws` would refuse, as a 400 of the route's family. */
export function refuseBadHandshake(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  // Only a request Node handed over as an upgrade goes to `ws`; a plain GET reaches the route's HTTP handler.
  if (!request.ws) return done();
  const problem = handshakeProblem(request.headers);
  if (problem) {
    for (const [name, value] of Object.entries(problem.headers ?? {})) reply.header(name, value);
    return done(new ValidationError(problem.message, problem.param));
  }
  upgrades.set(request.raw, { requestId: request.id, family: familyOf(request) });
  done();
}

/**
 * On the WebSocket server of a context (after @fastify/websocket is registered there): the 101 names the request's
 * id, and a handshake refused by a check of `ws` the gateway does not know yet is still answered in the family's
 * format (`wsClientError`), never by `ws`'s bare HTML.
 */
export function answerHandshakesInFamily(app: FastifyInstance): void {
  app.websocketServer.on('headers', (headers: string[], req: IncomingMessage) => {
    const known = upgrades.get(req);
    if (known) headers.push(`x-request-id: ${known.requestId}`);
  });
  app.websocketServer.on('wsClientError', (err: Error, socket: Duplex, req: IncomingMessage) => {
    const known = upgrades.get(req);
    answerRaw(socket as never, app.log, new ValidationError(`WebSocket handshake refused: ${err.message}`), { family: known?.family ?? 'openai', requestId: known?.requestId });
  });
}
