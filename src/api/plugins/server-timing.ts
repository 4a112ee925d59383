import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type { CallTiming } from '../../domain/relay/caller';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by a relayed call (relay-transport.ts callerOf); the relay engine fills it in as the call runs. */
    relayTiming: CallTiming | undefined;
    /** Set by a relayed call: the hosted tools a translation dropped. */
    relayDroppedTools: Set<string> | undefined;
  }
}

/**
 * The headers a relayed answer carries besides its own: Server-Timing, and `x-gateway-dropped-tools` naming the
 * hosted tools the client offered that the serving channel cannot run (dropped, the call went on without them).
 */
export function relayHeaders(request: FastifyRequest, elapsedMs: number): Record<string, string> {
  const out: Record<string, string> = {};
  const timing = request.relayTiming && serverTiming(request.relayTiming, elapsedMs);
  if (timing) out['server-timing'] = timing;
  if (request.relayDroppedTools?.size) out['x-gateway-dropped-tools'] = [...request.relayDroppedTools].join(',');
  return out;
}

/**
 * The Server-Timing header of a relayed call, in milliseconds: `upstream` (waiting on upstreams, failover included;
 * a stream's until its first event), `billing` (the settle before a plain answer leaves) and `gateway` (everything
 * else, up to the moment the headers are written). An operator, or `npm run bench -- relay`, tells the gateway's own
 * share of a slow call from the upstream's and the database's with it. Undefined before an upstream answered.
 */
export function serverTiming(t: CallTiming, elapsedMs: number): string | undefined {
  if (t.upstreamMs === undefined) return undefined;
  const parts = [`upstream;dur=${t.upstreamMs.toFixed(3)}`];
  let own = elapsedMs - t.upstreamMs;
  if (t.billingMs !== undefined) {
    parts.push(`billing;dur=${t.billingMs.toFixed(3)}`);
    own -= t.billingMs;
  }
  parts.push(`gateway;dur=${Math.max(0, own).toFixed(3)}`);
  return parts.join(', ');
}

/** Writes relayHeaders on plain relayed answers (streams write them with their headers: relay-transport.ts). */
export const serverTimingPlugin = fp(async (app) => {
  app.decorateRequest('relayTiming', undefined);
  app.decorateRequest('relayDroppedTools', undefined);
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.relayTiming) reply.headers(relayHeaders(request, reply.elapsedTime));
    done(null, payload);
  });
});
