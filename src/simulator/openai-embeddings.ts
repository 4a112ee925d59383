import { openaiError } from './errors';
import { json } from './reply';
import { countTokens } from './tokens';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject, optionalInt, requireString } from './validate';

/** Vector length when the request gives no `dimensions` (small on purpose: the simulator must be fast). */
export const DEFAULT_EMBEDDING_DIMENSIONS = 16;

/**
 * POST /v1/embeddings. `input`: a string, an array of strings, an array of token ids or an array of
 * such arrays. Each vector is unit length, derived from a hash of its input (same input, same vector),
 * stored as float32 so `encoding_format: 'base64'` (little-endian float32) decodes to exactly the
 * numbers of `'float'`. Usage: the tokens of every string input, the length of every token array.
 */
export function embeddings(ctx: HandlerContext): Reply {
  const body = ctx.body;
  if (!isObject(body)) return openaiError(400, { message: 'The request body must be a JSON object.' });
  const problem = requireString(body, 'model') ?? optionalInt(body, 'dimensions', 1, 8192);
  if (problem) return openaiError(400, problem);
  const inputs = normalizeInput(body.input);
  if (!inputs) return openaiError(400, { message: "Invalid 'input': expected a non-empty string, array of strings, array of tokens, or array of token arrays.", param: 'input', code: 'invalid_value' });
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') return openaiError(400, { message: "Invalid 'encoding_format': expected 'float' or 'base64'.", param: 'encoding_format', code: 'invalid_value' });
  const modelProblem = checkModel(body.model as string, 'embedding', ctx.strictModels);
  if (modelProblem) return openaiError(modelProblem.status ?? 400, modelProblem);

  const dims = (body.dimensions as number | undefined) ?? DEFAULT_EMBEDDING_DIMENSIONS;
  let tokens = 0;
  const data = inputs.map((input, index) => {
    tokens += typeof input === 'string' ? countTokens(input) : input.length;
    const v = vector(typeof input === 'string' ? input : input.join(','), dims);
    const embedding = format === 'base64' ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : Array.from(v);
    return { object: 'embedding', index, embedding };
  });
  return json(200, { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
}

type Input = string | number[];

function isTokens(v: unknown): v is number[] {
  return Array.isArray(v) && v.length > 0 && v.every((t) => Number.isInteger(t));
}

function normalizeInput(input: unknown): Input[] | undefined {
  if (typeof input === 'string') return input.length ? [input] : undefined;
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((s) => typeof s === 'string' && s.length > 0)) return input as string[];
  if (isTokens(input)) return [input];
  if (input.every(isTokens)) return input as number[][];
  return undefined;
}

/** A deterministic unit vector: FNV-1a of the text seeds a xorshift generator. Little-endian float32. */
export function vector(text: string, dims: number): Float32Array {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  let s = h >>> 0 || 1;
  const v = new Float32Array(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    const x = s / 0x80000000 - 1;
    v[i] = x;
    norm += x * x;
  }
  const k = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let i = 0; i < dims; i++) v[i] *= k;
  return v;
}
