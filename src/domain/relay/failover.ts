import type { ChannelConfig } from '../../gateway-config/schema';
import type { CallSignal } from '../ports/call-signal';
import { UpstreamError } from '../ports/upstream-error';
import type { ChannelCooldown } from './cooldown';
import { UpstreamRejectedError, UpstreamUnavailableError } from './errors';

/** Default bound on attempts per call: min(3, candidates). */
export const DEFAULT_MAX_ATTEMPTS = 3;

export interface FailoverOptions {
  maxAttempts?: number;
  /** Aborted when the client went away: no further attempt is started. */
  signal?: CallSignal;
  /** Called for each failed attempt (for logs: channel name and kind only). */
  onAttemptFailed?: (channel: ChannelConfig, err: UpstreamError) => void;
}

/**
 * Runs `attempt` on the candidates in order until one succeeds. A retryable UpstreamError (connection error,
 * timeout, 429, 5xx, unreadable answer) counts against the channel's health and moves on to the next one, at most
 * `maxAttempts` in all; any other error ends the call at once (a 4xx is the client's to fix and is not retried).
 * The caller makes "before the first byte reached the client" true by resolving `attempt` only once the answer
 * (for a stream, its first chunk) is in hand and nothing has been written yet.
 */
export async function withFailover<T>(
  candidates: readonly ChannelConfig[],
  cooldown: ChannelCooldown,
  attempt: (channel: ChannelConfig) => Promise<T>,
  opts: FailoverOptions = {},
): Promise<{ result: T; channel: ChannelConfig }> {
  const max = Math.min(opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS, candidates.length);
  let last: UpstreamError | null = null;
  for (let i = 0; i < max; i++) {
    const channel = candidates[i];
    try {
      const result = await attempt(channel);
      cooldown.recordSuccess(channel.name);
      return { result, channel };
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      if (!err.retryable) {
        if (err.kind === 'status') throw new UpstreamRejectedError(err.status ?? 400, err.upstreamCode, err.message, err.upstreamParam);
        throw err;
      }
      cooldown.recordFailure(channel.name);
      opts.onAttemptFailed?.(channel, err);
      last = err;
      if (opts.signal?.aborted) break;
    }
  }
  throw toUnavailable(last);
}

export function toUnavailable(err: UpstreamError | null): UpstreamUnavailableError {
  if (err?.kind === 'timeout') return new UpstreamUnavailableError('timeout');
  if (err?.kind === 'status' && err.status === 429) return new UpstreamUnavailableError('rate_limited', err.retryAfterSeconds);
  return new UpstreamUnavailableError('failed');
}
