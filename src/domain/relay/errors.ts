import { DomainError } from '../errors';

/**
 * Errors of the relay. Mapped to each family's wire format by src/api/errors like every DomainError; messages
 * never contain an upstream host, key or raw body.
 */

/** The upstream refused the request with a 4xx (not 429): passed to the client with its status and code. */
export class UpstreamRejectedError extends DomainError {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string | null, message: string, param: string | null) {
    super(message, param);
    this.status = status;
    this.code = code ?? 'upstream_error';
  }
}

/** Every channel tried failed (connection errors, timeouts, 429, 5xx): 502, 504 or 429 by the last failure. */
export class UpstreamUnavailableError extends DomainError {
  readonly status: number;
  readonly code: string;
  /** The last upstream's own `Retry-After`, passed on to the client. */
  declare readonly retryAfterSeconds?: number;
  constructor(kind: 'failed' | 'timeout' | 'rate_limited', retryAfterSeconds?: number) {
    super(
      kind === 'timeout'
        ? 'The upstream model service did not answer in time; try again'
        : kind === 'rate_limited'
          ? 'The upstream model service is rate limiting requests; try again later'
          : 'The upstream model service failed to answer; try again',
    );
    this.status = kind === 'timeout' ? 504 : kind === 'rate_limited' ? 429 : 502;
    this.code = kind === 'timeout' ? 'upstream_timeout' : kind === 'rate_limited' ? 'rate_limit_exceeded' : 'upstream_error';
    if (retryAfterSeconds !== undefined) Object.defineProperty(this, 'retryAfterSeconds', { value: retryAfterSeconds, enumerable: true });
  }
}

/** The model is served, but by no channel type that implements this endpoint (embeddings on an anthropic channel). */
export class EndpointNotSupportedError extends DomainError {
  readonly status = 400;
  readonly code = 'unsupported_endpoint';
  constructor(model: string, endpoint: string) {
    super(`The model '${model}' does not support ${endpoint}`, 'model');
  }
}

/** An input image that is not an image (or not an accepted reference). */
export class InvalidImageError extends DomainError {
  readonly status = 400;
  readonly code = 'invalid_image_file';
  constructor(message: string, param = 'image') {
    super(message, param);
  }
}

/** The client went away while the answer was being written (spec: write_response_body_failed; not billed). */
export class ClientGoneError extends DomainError {
  readonly status = 500;
  readonly code = 'write_response_body_failed';
  constructor() {
    super('The client closed the connection before the answer was delivered');
  }
}
