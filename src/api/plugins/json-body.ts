import fp from 'fastify-plugin';
import { ValidationError } from '../../domain/errors';
import { DEFAULT_JSON_LIMITS, type JsonShapeLimits, jsonShapeProblem } from '../../domain/json-shape';

/**
 * JSON bodies as Fastify parses them (prototype poisoning refused), except that a DELETE with
 * `Content-Type: application/json` and no body is accepted (many clients send the header on every call).
 * Every other method still refuses an empty JSON body with 400. Before parsing, the text's shape is bounded
 * (json-shape.ts): nesting depth and elements per array, each a 400 naming the limit and its setting.
 */
export const jsonBodyPlugin = fp<{ limits?: JsonShapeLimits }>(async (app, opts) => {
  const limits = opts.limits ?? DEFAULT_JSON_LIMITS;
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && request.method === 'DELETE') return done(null, undefined);
    const problem = jsonShapeProblem(body as string, limits);
    if (problem?.kind === 'depth') {
      return done(new ValidationError(`The request body nests arrays and objects more than ${problem.limit} levels deep (GATEWAY_JSON_MAX_DEPTH)`), undefined);
    }
    if (problem?.kind === 'array') {
      return done(new ValidationError(`An array in the request body has more than ${problem.limit} elements (GATEWAY_JSON_MAX_ARRAY_LENGTH)`), undefined);
    }
    return parseJson(request, body as string, done);
  });
});
