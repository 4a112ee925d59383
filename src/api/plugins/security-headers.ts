import fp from 'fastify-plugin';

/**
 * Headers every answer carries unless its route says otherwise:
 * - `X-Content-Type-Options: nosniff`: a browser never reads a JSON error or an upstream's text as HTML or script;
 * - `Referrer-Policy: no-referrer`: console URLs (and anything in them) never leave in a Referer header;
 * - `Cache-Control: no-store`: answers carry key material, signed links and customers' conversations, which no
 *   shared or browser cache may keep. Streams (`no-cache`) and the console's static assets set their own.
 * Set before the handler runs, so a route's own value replaces it; streams written to the socket add SECURITY_HEADERS.
 */
export const SECURITY_HEADERS = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' } as const;

export const securityHeadersPlugin = fp(async (app) => {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SECURITY_HEADERS);
    reply.header('cache-control', 'no-store');
    done();
  });
});
