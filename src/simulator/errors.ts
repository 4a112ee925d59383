import type { Api, Reply } from './types';
import { json } from './reply';
import { geminiError } from './gemini';

/** OpenAI's error `type` by status (as the real API answers them). */
function openaiType(status: number): string {
  if (status === 429) return 'requests';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** Anthropic's error `type` by status (https://docs.anthropic.com/en/api/errors). */
function anthropicType(status: number): string {
  switch (status) {
    case 400: return 'invalid_request_error';
    case 401: return 'authentication_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 529: return 'overloaded_error';
    default: return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

const DEFAULT_MESSAGES: Record<number, string> = {
  400: 'Invalid request.',
  401: 'Incorrect API key provided.',
  403: 'Permission denied.',
  404: 'Not found.',
  408: 'Request timed out.',
  409: 'Conflict.',
  413: 'Request too large.',
  422: 'Unprocessable request.',
  429: 'Rate limit reached for requests. Please try again later.',
  500: 'The server had an error while processing your request. Sorry about that!',
  502: 'Bad gateway.',
  503: 'The engine is currently overloaded, please try again later.',
  504: 'Gateway timeout.',
  529: 'Overloaded.',
};

export interface ErrorDetail {
  message?: string;
  /** OpenAI only: the offending parameter. */
  param?: string | null;
  /** OpenAI only: the machine-readable code, e.g. `invalid_api_key`, `model_not_found`. */
  code?: string | null;
  /** Overrides the type derived from the status. */
  type?: string;
  /** Video family B repeats the request id in its error body. */
  requestId?: string;
  /** Video family C: `details.field` (`details.reason` is the message). */
  field?: string;
}

const DEFAULT_CODES: Record<number, string> = { 401: 'invalid_api_key', 429: 'rate_limit_exceeded' };

/** OpenAI: `{error:{message,type,param,code}}`. */
export function openaiError(status: number, d: ErrorDetail = {}): Reply {
  const error = {
    message: d.message ?? DEFAULT_MESSAGES[status] ?? `Simulated upstream error ${status}.`,
    type: d.type ?? openaiType(status),
    param: d.param ?? null,
    code: d.code !== undefined ? d.code : DEFAULT_CODES[status] ?? null,
  };
  return withRetryAfter(json(status, { error }), status);
}

/** Anthropic: `{type:'error', error:{type, message}}`. */
export function anthropicError(status: number, d: ErrorDetail = {}): Reply {
  const error = { type: d.type ?? anthropicType(status), message: d.message ?? DEFAULT_MESSAGES[status] ?? `Simulated upstream error ${status}.` };
  return withRetryAfter(json(status, { type: 'error', error }), status);
}

const VIDEO_B_CODES: Record<number, string> = { 400: 'InvalidParameter', 401: 'InvalidApiKey', 403: 'AccessDenied', 404: 'NotFound', 429: 'Throttling' };

/** Video family B (the gateway's own decision): `{code, message, request_id}`. */
export function videoBError(status: number, d: ErrorDetail = {}): Reply {
  const code = d.code ?? VIDEO_B_CODES[status] ?? (status >= 500 ? 'InternalError' : 'InvalidParameter');
  const message = d.message ?? DEFAULT_MESSAGES[status] ?? `Simulated upstream error ${status}.`;
  return withRetryAfter(json(status, { code, message, request_id: d.requestId ?? '' }), status);
}

const VIDEO_C_CODES: Record<number, string> = { 400: 'INVALID_PARAMETER', 401: 'INVALID_API_KEY', 403: 'ACCESS_DENIED', 404: 'NOT_FOUND', 429: 'QUOTA_EXCEEDED' };

/** Video family C (spec "Errors" rule 5): `{success:false, message, error_code, details:{field, reason}}`. */
export function videoCError(status: number, d: ErrorDetail = {}): Reply {
  const code = d.code ?? VIDEO_C_CODES[status] ?? (status >= 500 ? 'INTERNAL_ERROR' : 'INVALID_PARAMETER');
  const message = d.message ?? DEFAULT_MESSAGES[status] ?? `Simulated upstream error ${status}.`;
  return withRetryAfter(json(status, { success: false, message, error_code: code, details: { field: d.field ?? null, reason: message } }), status);
}

/** Cohere (v2 rerank): `{message}`. */
export function cohereError(status: number, d: ErrorDetail = {}): Reply {
  return withRetryAfter(json(status, { message: d.message ?? DEFAULT_MESSAGES[status] ?? `Simulated upstream error ${status}.` }), status);
}

/** Video family A: the OpenAI shape; a 401 has type `authentication_error` (spec "Error object"). */
export function videoAError(status: number, d: ErrorDetail = {}): Reply {
  return openaiError(status, { ...d, type: d.type ?? (status === 401 ? 'authentication_error' : undefined) });
}

export function apiError(api: Api, status: number, d: ErrorDetail = {}): Reply {
  switch (api) {
    case 'anthropic': return anthropicError(status, d);
    case 'video-a': return videoAError(status, d);
    case 'video-b': return videoBError(status, d);
    case 'video-c': return videoCError(status, d);
    case 'cohere': return cohereError(status, d);
    case 'gemini': return geminiError(status, d.message ?? DEFAULT_MESSAGES[status] ?? 'Error.');
    default: return openaiError(status, d);
  }
}

function withRetryAfter(r: Reply, status: number): Reply {
  if (status === 429 || status === 503 || status === 529) r.headers['retry-after'] = '1';
  return r;
}
