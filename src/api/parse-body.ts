import type { z } from 'zod';
import { ValidationError } from '../domain/errors';

/**
 * A body (or form fields) checked against its zod schema outside Fastify's own validation (multipart forms, PUT
 * variants, WebSocket messages): the first issue as a 400 naming the field, as the routes' validation does.
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue.path.join('.');
  throw new ValidationError(field ? `${field}: ${issue.message}` : `body: ${issue.message}`, field || null);
}
