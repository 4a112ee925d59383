import type { PoolClient } from 'pg';
import type { KeyAuthenticator } from './key-auth';

/** Tells every api replica that a key changed, so no replica serves a stale cached copy. */
export interface KeyChangeBus {
  /** Inside the writing transaction; several ids go out in one round trip. */
  publish(tx: PoolClient, tokenIds: number | readonly number[]): Promise<void>;
  /** After commit; resolves once this replica has dropped its cached copy. */
  afterCommit(tokenId: number): Promise<void>;
  close(): Promise<void>;
}

/** One process (embedded mode): dropping the local cache entry is the whole job. */
export function createLocalKeyChangeBus(keyAuth: KeyAuthenticator): KeyChangeBus {
  return {
    async publish() {},
    async afterCommit(tokenId) {
      keyAuth.invalidate(tokenId);
    },
    async close() {},
  };
}
