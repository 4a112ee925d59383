import { DomainError } from '../domain/errors';

/** Any thrown thing, reduced to what every family's formatter needs. */
export interface WireError {
  status: number;
  code: string;
  message: string;
  param: string | null;
}

interface FastifyLikeError {
  statusCode?: number;
  code?: string;
  message?: string;
  validation?: Array<{ instancePath?: string; message?: string; params?: Record<string, unknown> }>;
  validationContext?: string;
}

function validationMessage(err: FastifyLikeError): { message: string; param: string | null } {
  const first = err.validation?.[0];
  const field = (first?.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const what = first?.message ?? 'is invalid';
  if (!field) return { message: `${err.validationContext ?? 'request'}: ${what}`, param: null };
  return { message: `${field}: ${what}`, param: field };
}

/**
 * Failures of Node's HTTP parser (the request never reached routing) and the CONNECT method, which Node hands to
 * the server's 'connect' event. Keyed by the error's `code`; other `HPE_*` codes are a generic 400.
 */
const CONNECTION_ERRORS: Record<string, Omit<WireError, 'param'>> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: 'headers_too_large', message: 'The request headers are too large' },
  HPE_INVALID_METHOD: { status: 400, code: 'invalid_request', message: 'The request method is not supported' },
  HPE_INVALID_URL: { status: 400, code: 'invalid_request', message: 'The request URL is malformed' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, code: 'payload_too_large', message: 'The chunk extensions of the request body are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'request_timeout', message: 'The request was not received in time' },
  ERR_HTTP_HEADERS_TIMEOUT: { status: 408, code: 'request_timeout', message: 'The request headers were not received in time' },
  CONNECT_NOT_SUPPORTED: { status: 405, code: 'method_not_allowed', message: 'CONNECT is not supported: this server is not a proxy' },
};

export function toWireError(err: unknown): WireError {
  if (err instanceof DomainError) {
    return { status: err.status, code: err.code, message: err.message, param: err.param };
  }
  const e = (err ?? {}) as FastifyLikeError;
  if (typeof e.code === 'string' && !e.statusCode) {
    const known = CONNECTION_ERRORS[e.code];
    if (known) return { ...known, param: null };
    if (e.code.startsWith('HPE_')) return { status: 400, code: 'invalid_request', message: 'The request is not valid HTTP/1.1', param: null };
  }
  if (e.validation) return { status: 400, code: 'invalid_request', ...validationMessage(e) };
  // SQLSTATE class 22 (data exception: a value the database cannot store) can only come from request data
  // that validation let through; it is the client's to fix, not a server failure.
  if (typeof e.code === 'string' && /^22[0-9A-Z]{3}$/.test(e.code) && !e.statusCode) {
    return { status: 400, code: 'invalid_request', message: 'A value in the request cannot be stored', param: null };
  }
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON', param: null };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, code: 'invalid_json', message: 'The request body is empty but Content-Type is application/json', param: null };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'payload_too_large', message: 'The request body is too large', param: null };
    case 'FST_ERR_BAD_URL':
      return { status: 400, code: 'invalid_request', message: 'The request URL is malformed', param: null };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, code: 'unsupported_media_type', message: 'Unsupported Content-Type', param: null };
  }
  if (err instanceof SyntaxError && e.statusCode === 400) {
    return { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON', param: null };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { status: e.statusCode, code: 'invalid_request', message: e.message ?? 'Bad request', param: null };
  }
  return { status: 500, code: 'internal_error', message: 'Internal server error', param: null };
}
