import swagger from '@fastify/swagger';
import type { FastifyDynamicSwaggerOptions, SwaggerTransform } from '@fastify/swagger';
import type { FastifySchema } from 'fastify';
import fp from 'fastify-plugin';
import { declareFamily } from '../errors/route-family';

/**
 * Builds the OpenAPI document from the routes' zod schemas (the single source of request shapes) and serves it
 * at GET /openapi.json. Registered before the routes so it sees every one of them.
 */
export const openApiPlugin = fp(async (app, opts: Pick<FastifyDynamicSwaggerOptions, 'transform' | 'transformObject'>) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'AI model gateway',
        version: '1.0.0',
        description: 'OpenAI-compatible inference and key management behind one API key.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key (sk-...); the raw key without Bearer is accepted too' },
          systemToken: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'System token, no prefix' },
        },
      },
    },
    transform: opts.transform,
    transformObject: opts.transformObject,
  });
  await app.register(async (docs) => {
    declareFamily(docs, 'openai');
    docs.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  });
});

/**
 * Response schemas document the contract in the OpenAPI document; they never filter or reject what a route sends
 * (a relayed body keeps every field its upstream added, and an error body its family's shape), so a body is
 * serialised exactly as it would be without a schema.
 */
export const documentingSerializerCompiler = () => (data: unknown) => JSON.stringify(data);

/**
 * A multipart route reads its form itself (part by part, within a byte budget), so it has no `body` schema to
 * validate with; it documents the form as `schema.form` (schemas/forms.ts), which becomes the operation's request
 * body here, under the content types its `consumes` names. The fuzz test finds every upload route this way.
 */
export function documentingForms<S extends FastifySchema>(transform: SwaggerTransform<S>): SwaggerTransform<S> {
  return (doc) => {
    const schema = doc.schema as Record<string, unknown> | undefined;
    if (!schema?.form || schema.body) return transform(doc);
    const { form, ...rest } = schema;
    return transform({ ...doc, schema: { ...rest, body: form } as S });
  };
}
