import type { WireError } from './wire-error';

/**
 * Each route family answers errors in its own wire format; this is the one place that knows them. A route group
 * declares its family (src/api/errors/route-family.ts); `guessFamily` is only for requests no route matched.
 * A new family (video B `{code, message, request_id}`, video C `{success, message, error_code, details}`) is one
 * more entry in `FORMATTERS` and one `declareFamily` call in its route group.
 */
export type Family = 'management' | 'openai' | 'anthropic' | 'gemini' | 'video-a' | 'video-b' | 'video-c';

/** What a formatter may need besides the error itself. */
export interface ErrorContext {
  requestId?: string;
}

// OpenAI itself answers a bad key with type invalid_request_error and code invalid_api_key.
const OPENAI_TYPES: Record<number, string> = {
  401: 'invalid_request_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  429: 'insufficient_quota',
  500: 'server_error',
  503: 'server_error',
};

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'overloaded_error',
};

/** Google's canonical status names by HTTP status (what the Gemini SDKs and CLI read besides the code). */
const GOOGLE_STATUSES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  402: 'RESOURCE_EXHAUSTED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  405: 'UNIMPLEMENTED',
  408: 'DEADLINE_EXCEEDED',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** A Google status: an upstream Gemini's own (passed on), else the one of the HTTP status. */
export function googleStatus(status: number, code?: string): string {
  if (code && /^[A-Z][A-Z_]{2,40}$/.test(code)) return code;
  return GOOGLE_STATUSES[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
}

/** Family A codes (spec "Errors" rule 4) for the gateway's generic ones; others pass unchanged. */
const VIDEO_A_CODES: Record<string, string> = {
  insufficient_quota: 'quota_exceeded',
  model_not_found: 'invalid_model',
  invalid_json: 'invalid_request',
};

// docs/api.md, "Error families".
const VIDEO_B_CODES: Record<number, string> = {
  400: 'InvalidParameter',
  401: 'InvalidApiKey',
  403: 'AccessDenied',
  404: 'TaskNotFound',
  409: 'InvalidParameter',
  413: 'InvalidParameter',
  429: 'QuotaExhausted',
};

// Spec "Errors" rule 5, plus the gateway-wide cases the spec leaves to us.
const VIDEO_C_CODES: Record<string, string> = {
  invalid_prompt: 'INVALID_PROMPT',
  INVALID_PROMPT: 'INVALID_PROMPT',
  invalid_model: 'INVALID_MODEL',
  INVALID_MODEL: 'INVALID_MODEL',
  model_not_found: 'INVALID_MODEL',
  insufficient_quota: 'QUOTA_EXCEEDED',
  video_not_found: 'TASK_NOT_FOUND',
  not_found: 'TASK_NOT_FOUND',
  invalid_api_key: 'INVALID_API_KEY',
  model_not_allowed: 'MODEL_NOT_ALLOWED',
};

const FORMATTERS: Record<Family, (err: WireError, ctx: ErrorContext) => unknown> = {
  'video-a': (err) => ({
    error: {
      code: VIDEO_A_CODES[err.code] ?? err.code,
      message: err.message,
      type: err.status === 401 ? 'authentication_error' : err.status >= 500 ? 'server_error' : 'invalid_request_error',
    },
  }),
  'video-b': (err, ctx) => ({
    code: err.code === 'rate_limit_exceeded' ? 'Throttling' : (VIDEO_B_CODES[err.status] ?? (err.status >= 500 ? 'InternalError' : 'InvalidParameter')),
    message: err.message,
    request_id: ctx.requestId ?? '',
  }),
  'video-c': (err) => ({
    success: false,
    message: err.message,
    error_code: VIDEO_C_CODES[err.code] ?? (err.status >= 500 ? 'INTERNAL_ERROR' : err.code.toUpperCase()),
    details: { field: err.param ?? '', reason: err.message.includes(': ') ? err.message.slice(err.message.indexOf(': ') + 2) : err.message },
  }),
  management: (err) => ({ success: false, message: err.message }),
  anthropic: (err) => ({
    type: 'error',
    error: { type: ANTHROPIC_TYPES[err.status] ?? (err.status >= 500 ? 'api_error' : 'invalid_request_error'), message: err.message },
  }),
  gemini: (err) => ({ error: { code: err.status, message: err.message, status: googleStatus(err.status, err.code) } }),
  openai: (err) => {
    // 429 is the quota's (insufficient_quota) unless a rate limit refused it.
    const type = err.code === 'rate_limit_exceeded' ? 'rate_limit_error' : (OPENAI_TYPES[err.status] ?? (err.status >= 500 ? 'server_error' : 'invalid_request_error'));
    return { error: { message: err.message, type, param: err.param, code: err.code } };
  },
};

export function formatError(family: Family, err: WireError, ctx: ErrorContext = {}): unknown {
  return FORMATTERS[family](err, ctx);
}

/** The path of a request target without query, with duplicate slashes collapsed (`//api//token//` is `/api/token/`). */
export function normalizedPath(target: string): string {
  let path = target.split('?')[0];
  // Absolute form (`GET http://host/api/token/ HTTP/1.1`): keep only the path.
  const absolute = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i.exec(path);
  if (absolute) path = path.slice(absolute[0].length) || '/';
  return path.replace(/\/{2,}/g, '/');
}

/**
 * The family of a request that matched no route or failed before routing, from its path. Requests that matched
 * a route take the family their route group declared instead.
 */
export function guessFamily(target: string): Family {
  const path = normalizedPath(target);
  if (path === '/api' || path.startsWith('/api/') || path === '/console' || path.startsWith('/console/')) return 'management';
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic';
  if (path === '/v1beta' || path.startsWith('/v1beta/') || (path.startsWith('/v1/models/') && path.includes(':'))) return 'gemini';
  if (path === '/v1/videos' || path.startsWith('/v1/videos/') || path.startsWith('/v1/files/video/')) return 'video-a';
  if (path.startsWith('/vendorA/') || path.startsWith('/v1/tasks/')) return 'video-b';
  if (path.startsWith('/vendorB/')) return 'video-c';
  return 'openai';
}
