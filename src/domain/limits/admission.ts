import { RateLimitedError } from '../errors';

/** What a key's limits count, one kind per refusal. */
export type LimitKind = 'requests' | 'tokens' | 'concurrency';

export interface Admission {
  /** OpenAI's `x-ratelimit-*` headers for the limits set. */
  headers: Record<string, string>;
  /** Frees the in-flight slot (idempotent); a no-op without a concurrency limit. */
  release(): void;
  /** Counts a settled call's tokens into the current minute (only when a token limit is set). */
  billedTokens(tokens: number): void;
}

export const UNLIMITED: Admission = Object.freeze({ headers: {}, release() {}, billedTokens() {} });

export class KeyLimitError extends RateLimitedError {
  constructor(
    readonly kind: LimitKind,
    override readonly retryAfterSeconds: number,
    readonly headers: Record<string, string>,
  ) {
    super(
      kind === 'concurrency'
        ? 'Rate limit reached: too many requests of this key are in flight; retry when one has finished'
        : `Rate limit reached: this key's ${kind} per minute are used up; retry in ${retryAfterSeconds}s`,
    );
  }
}
