import type { Tx } from '../ports/transactions';
import type { KeyAuthenticator } from './key-auth';

/**
 * The receipt of one publish call: which keys it announced (and, inside the bus that made it, exactly the
 * notifications that call sent). Opaque to callers: hand it from the transaction to afterCommit.
 */
export interface KeyChange {
  readonly tokenIds: readonly number[];
}

/** Tells every api replica that a key changed, so no replica serves a stale cached copy. */
export interface KeyChangeBus {
  /** Inside the writing transaction; several ids go out in one round trip. Returns the receipt for afterCommit. */
  publish(tx: Tx, tokenIds: number | readonly number[]): Promise<KeyChange>;
  /**
   * After commit, once per receipt; resolves when no replica can still serve the receipt's keys from its cache
   * (bounded: a replica that does not confirm in time is logged, not waited for forever).
   */
  afterCommit(change: KeyChange): Promise<void>;
  close(): Promise<void>;
}

export function keyChangeIds(tokenIds: number | readonly number[]): readonly number[] {
  return typeof tokenIds === 'number' ? [tokenIds] : [...tokenIds];
}

/** One process (embedded mode): dropping the local cache entries is the whole job. */
export function createLocalKeyChangeBus(keyAuth: KeyAuthenticator): KeyChangeBus {
  return {
    async publish(_tx, tokenIds) {
      return { tokenIds: keyChangeIds(tokenIds) };
    },
    async afterCommit(change) {
      for (const id of change.tokenIds) keyAuth.invalidate(id);
    },
    async close() {},
  };
}
