import type { FastifyRequest } from 'fastify';
import { DomainError, PayloadTooLargeError, ValidationError } from '../domain/errors';

// Reading multipart/form-data bodies (image edits, video submits) within a byte budget, the way the request
// guards bound every other body.

/** GATEWAY_MULTIPART_LIMIT_BYTES' default: the largest multipart body, counted on the bytes read. */
export const DEFAULT_MULTIPART_LIMIT_BYTES = 25 * 1024 * 1024;

/**
 * The multipart parser (busboy) reports a body that does not match its boundary ("Unexpected end of form",
 * "Malformed part header") as a plain Error: the client's mistake, so a 400, not a 500. Errors that already carry
 * their status (ours, and the plugin's size limits) pass unchanged.
 */
export function asMalformedForm(err: unknown, request: FastifyRequest): never {
  // The rest of a refused body is read and dropped (bounded by the request guards' drain), not parsed.
  request.raw.unpipe();
  request.raw.resume();
  const statusCode = (err as { statusCode?: unknown })?.statusCode;
  if (statusCode === 413) throw new PayloadTooLargeError('The request body is too large');
  if (err instanceof DomainError || typeof statusCode === 'number') throw err;
  throw new ValidationError('body: malformed multipart/form-data', null);
}

/**
 * A file part read chunk by chunk against what is left of the form's byte budget, so a body without a
 * Content-Length (chunked) is held to the same limit as a declared one, and never buffered past it.
 */
export async function readWithin(file: AsyncIterable<Buffer>, budget: { left: number }): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of file) {
    budget.left -= chunk.length;
    if (budget.left < 0) throw new PayloadTooLargeError('The request body is too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** A text field's value, its name and value counted against the form's byte budget. */
export function fieldWithin(part: { fieldname: string; value: unknown }, budget: { left: number }): string {
  const value = typeof part.value === 'string' ? part.value : String(part.value);
  budget.left -= Buffer.byteLength(value) + Buffer.byteLength(part.fieldname);
  if (budget.left < 0) throw new PayloadTooLargeError('The request body is too large');
  return value;
}
