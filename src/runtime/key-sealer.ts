import path from 'node:path';
import { Piscina } from 'piscina';
import type { KeySealer } from '../domain/keys/key-sealer';
import { keyMaterialKey } from '../domain/keys/key-material';

/**
 * The worker's KeySealer: key material made on threads of their own (piscina, src/runtime/seal-keys.worker.js), at
 * a lower priority than the thread that answers requests (a nice increment, where the platform has one), so a
 * rollout of a million keys never holds the event loop of the process that also serves the api. A chunk's keys
 * are sealed in one task; the threads stop after a minute without work.
 */
export function createThreadedKeySealer(secret: string, opts: { threads?: number; niceIncrement?: number } = {}): KeySealer {
  const pool = new Piscina<{ count: number }, Uint8Array>({
    filename: path.join(__dirname, 'seal-keys.worker.js'),
    minThreads: 0,
    // One thread seals 10,000 keys in about a second, ahead of the one connection that writes them.
    maxThreads: opts.threads ?? 1,
    idleTimeout: 60_000,
    niceIncrement: opts.niceIncrement ?? 10,
    // The same key KeyCipher derives from GATEWAY_SECRET: the keys sealed here open with it.
    workerData: { aesKey: keyMaterialKey(secret) },
  });
  // A thread that dies between tasks is reported on the pool: the next seal starts another.
  pool.on('error', () => undefined);
  return {
    async seal(count) {
      if (count <= 0) return Buffer.alloc(0);
      const out = await pool.run({ count });
      return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    },
    close: () => pool.destroy(),
  };
}
