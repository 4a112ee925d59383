import fp from 'fastify-plugin';

/**
 * JSON bodies as Fastify parses them (prototype poisoning refused), except that a DELETE with
 * `Content-Type: application/json` and no body is accepted (many clients send the header on every call).
 * Every other method still refuses an empty JSON body with 400.
 */
export const jsonBodyPlugin = fp(async (app) => {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && request.method === 'DELETE') return done(null, undefined);
    return parseJson(request, body as string, done);
  });
});
