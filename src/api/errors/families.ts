import type { WireError } from './wire-error';

/** Each route family answers errors in its own wire format; this is the one place that knows them. */
export type Family = 'management' | 'openai' | 'anthropic';

export function familyOf(url: string): Family {
  if (url.startsWith('/api/') || url === '/api' || url.startsWith('/api?')) return 'management';
  if (url.startsWith('/v1/messages')) return 'anthropic';
  return 'openai';
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

export function formatError(family: Family, err: WireError): unknown {
  switch (family) {
    case 'management':
      return { success: false, message: err.message };
    case 'anthropic':
      return { type: 'error', error: { type: ANTHROPIC_TYPES[err.status] ?? 'invalid_request_error', message: err.message } };
    case 'openai': {
      let type = OPENAI_TYPES[err.status] ?? 'invalid_request_error';
      if (err.status === 429 && err.code === 'rate_limit_exceeded') type = 'requests';
      return { error: { message: err.message, type, param: err.param, code: err.code } };
    }
  }
}
