import { DomainError } from '../errors';

/** A task id this account has no task under (another account's id reads the same). */
export class VideoNotFoundError extends DomainError {
  readonly status = 404;
  readonly code = 'video_not_found';
  constructor(id: string) {
    super(`Video task ${id} not found.`, 'video_id');
  }
}

/** The content of a task that has not completed. */
export class VideoNotReadyError extends DomainError {
  readonly status = 409;
  readonly code = 'video_not_ready';
  constructor(id: string, status: string) {
    super(`Video task ${id} is not ready (status ${status}).`, 'video_id');
  }
}

/** Cancel of a task that already finished. */
export class VideoNotCancellableError extends DomainError {
  readonly status = 409;
  readonly code = 'video_not_cancellable';
  constructor(id: string) {
    super(`Video task ${id} has already finished and cannot be cancelled.`, 'video_id');
  }
}

/** An Idempotency-Key reused on another video family's submit: the key names a task the caller cannot reach here. */
export class IdempotencyKeyReusedError extends DomainError {
  readonly status = 409;
  readonly code = 'idempotency_key_reused';
  constructor(taskId: string) {
    super(`Idempotency-Key: already used for video task ${taskId} of another video API; use a new key for this request`, 'idempotency-key');
  }
}

/** A model of the family that no video channel of the key's group serves. */
export class VideoModelUnavailableError extends DomainError {
  readonly status = 400;
  readonly code = 'invalid_model';
  constructor(model: string) {
    super(`model: '${model}' is not served by this gateway`, 'model');
  }
}

/** X-Callback-Url that is not https (or http to a loopback host). */
export class CallbackUrlError extends DomainError {
  readonly status = 400;
  readonly code = 'invalid_callback_url';
  constructor(reason: string) {
    super(`X-Callback-Url: ${reason}`, 'x-callback-url');
  }
}
