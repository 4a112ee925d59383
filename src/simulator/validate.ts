import { simulatorModel, type ModelKind } from './catalog';
import type { ErrorDetail } from './errors';

/** Small request checks shared by the handlers; each returns an error detail (status 400 unless said) or undefined. */

export type Problem = ErrorDetail & { status?: number };

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function requireString(body: Record<string, unknown>, field: string): Problem | undefined {
  const v = body[field];
  if (typeof v === 'string' && v.length > 0) return undefined;
  return v === undefined
    ? { message: `you must provide a ${field} parameter`, param: field, code: 'missing_required_parameter' }
    : { message: `Invalid type for '${field}': expected a non-empty string.`, param: field, code: 'invalid_type' };
}

/** Undefined when absent; a problem when present but not an integer in [min, max]. */
export function optionalInt(body: Record<string, unknown>, field: string, min: number, max = Number.MAX_SAFE_INTEGER): Problem | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max) return undefined;
  return { message: `Invalid '${field}': expected an integer between ${min} and ${max}, got ${JSON.stringify(v)}.`, param: field, code: 'invalid_value' };
}

/**
 * With `strictModels`, an id outside the simulator list is 404 `model_not_found`. A listed model of
 * another kind (an embedding model on chat) is always 400: the real upstreams refuse that too.
 */
export function checkModel(model: string, kind: ModelKind, strict: boolean): Problem | undefined {
  const m = simulatorModel(model);
  if (!m) {
    return strict ? { status: 404, message: `The model \`${model}\` does not exist or you do not have access to it.`, param: 'model', code: 'model_not_found' } : undefined;
  }
  if (m.kind !== kind) return { message: `The model \`${model}\` is a ${m.kind} model and cannot serve this endpoint.`, param: 'model', code: 'model_not_supported' };
  return undefined;
}
