import type { Admission } from '../limits/admission';
import type { KeyLimits } from '../limits/key-limits';

/**
 * Counts a key's requests, billed tokens and calls in flight against its limits, exactly across every process that
 * serves it (src/db/key-rate-limiter.ts keeps the counts in the database).
 */
export interface KeyLimiter {
  /** The clock of windows and periods (ms since the epoch). */
  readonly now: () => number;
  /**
   * Admits one request of `tokenId` under `limits`, or rejects with KeyLimitError (nothing counted). A key without
   * limits is admitted at once (no promise).
   */
  admit(tokenId: number, limits: KeyLimits): Admission | Promise<Admission>;
  /** The key's current minute: requests, billed tokens, calls in flight and seconds to the next window. */
  usage(tokenId: number): Promise<{ requests: number; tokens: number; inFlight: number; resetSeconds: number }>;
}
