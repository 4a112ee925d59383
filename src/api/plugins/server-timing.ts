import fp from 'fastify-plugin';
import type { CallTiming } from '../../domain/relay/caller';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by a relayed call (relay-transport.ts callerOf); the relay engine fills it in as the call runs. */
    relayTiming: CallTiming | undefined;
  }
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

/** Writes Server-Timing on plain relayed answers (streams write it with their headers: relay-transport.ts). */
export const serverTimingPlugin = fp(async (app) => {
  app.decorateRequest('relayTiming', undefined);
  app.addHook('onSend', (request, reply, payload, done) => {
    const header = request.relayTiming && serverTiming(request.relayTiming, reply.elapsedTime);
    if (header) reply.header('server-timing', header);
    done(null, payload);
  });
});
