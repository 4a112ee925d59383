/**
 * Domain errors. They know nothing of HTTP families: src/api/errors maps each to the
 * wire format of the route family that raised it.
 */
export abstract class DomainError extends Error {
  abstract readonly status: number;
  /** Machine-readable code; families translate it to their own vocabulary. */
  abstract readonly code: string;
  /** Sent as `Retry-After` (seconds) when set. */
  readonly retryAfterSeconds?: number;
  constructor(message: string, public readonly param: string | null = null) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationError extends DomainError {
  readonly status = 400;
  readonly code = 'invalid_request';
}

export class InvalidApiKeyError extends DomainError {
  readonly status = 401;
  readonly code = 'invalid_api_key';
  constructor(message = 'Invalid API key provided') {
    super(message);
  }
}

export class InvalidSystemTokenError extends DomainError {
  readonly status = 401;
  readonly code = 'invalid_system_token';
  constructor(message = 'invalid system token') {
    super(message);
  }
}

export class InvalidCredentialsError extends DomainError {
  readonly status = 401;
  readonly code = 'invalid_credentials';
  constructor(message = 'invalid username or password') {
    super(message);
  }
}

export class ModelNotAllowedError extends DomainError {
  readonly status = 403;
  readonly code = 'model_not_allowed';
  constructor(model: string) {
    super(`This token is not authorized to use model ${model}`, 'model');
  }
}

export class ForbiddenError extends DomainError {
  readonly status = 403;
  readonly code = 'forbidden';
}

export class NotFoundError extends DomainError {
  readonly status = 404;
  readonly code = 'not_found';
}

/** A transport the gateway does not serve where the client may use another (the Responses API over a WebSocket). */
export class UpgradeRequiredError extends DomainError {
  readonly status = 426;
  readonly code = 'websocket_not_supported';
}

export class ModelNotFoundError extends DomainError {
  readonly status = 404;
  readonly code = 'model_not_found';
  constructor(model: string) {
    super(`The model '${model}' does not exist or you do not have access to it.`, 'model');
  }
}

export class ConflictError extends DomainError {
  readonly status = 409;
  readonly code = 'conflict';
}

export class PayloadTooLargeError extends DomainError {
  readonly status = 413;
  readonly code = 'payload_too_large';
}

export class QuotaExhaustedError extends DomainError {
  readonly status = 429;
  readonly code = 'insufficient_quota';
  constructor(message = 'You exceeded your current quota: the key or account has insufficient quota') {
    super(message);
  }
}

export class RateLimitedError extends DomainError {
  readonly status = 429;
  readonly code = 'rate_limit_exceeded';
}

/** Sign-in attempts refused for a while after too many failures (by username or by client address). */
export class TooManyAttemptsError extends DomainError {
  readonly status = 429;
  readonly code = 'too_many_attempts';
  constructor(override readonly retryAfterSeconds: number) {
    super(`too many failed sign-in attempts; try again in ${retryAfterSeconds} seconds`);
  }
}

export class UnavailableError extends DomainError {
  readonly status = 503;
  readonly code = 'unavailable';
}

/** The model is served by a channel but the gateway config gives it no price: it cannot be metered. */
export class ModelNotPricedError extends DomainError {
  readonly status = 400;
  readonly code = 'model_not_priced';
  constructor(model: string) {
    super(`The model '${model}' has no price configured on this gateway, so it cannot be used.`, 'model');
  }
}

/** A cost was asked in a unit the model is not priced in (tokens for an image model, units for a chat model). */
export class PriceKindError extends DomainError {
  readonly status = 400;
  readonly code = 'price_kind_mismatch';
  constructor(message: string) {
    super(message, 'model');
  }
}

/** A cost that would not be a safe integer number of credits (absurd token counts or prices). */
export class CostOutOfRangeError extends DomainError {
  readonly status = 400;
  readonly code = 'cost_out_of_range';
  constructor(message = 'The cost of this request is too large to be billed') {
    super(message);
  }
}
