import { createCipheriv, createDecipheriv, hash, randomFillSync, timingSafeEqual } from 'node:crypto';
import { derivedKey } from '../secrets/derived-key';

const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const KEY_LENGTH = 48;
export const KEY_PREFIX = 'sk-';

const POOL_BYTES = 64 * 1024;
let pool = Buffer.alloc(0);
let poolUsed = 0;

/**
 * `n` bytes from the CSPRNG, served from a pool drawn 64 KiB at a time (one call into the CSPRNG per thousand keys,
 * not one per key, as crypto.randomUUID does). Every byte is handed out once, and a refill allocates a new pool, so
 * a slice handed out is never overwritten.
 */
function randomFromPool(n: number): Buffer {
  if (poolUsed + n > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(Math.max(POOL_BYTES, n)));
    poolUsed = 0;
  }
  const out = pool.subarray(poolUsed, poolUsed + n);
  poolUsed += n;
  return out;
}

const ALPHABET_CODES = Buffer.from(KEY_ALPHABET, 'latin1');
const UNBIASED_LIMIT = 256 - (256 % KEY_ALPHABET.length);

/** 48 characters from a CSPRNG, without modulo bias (bytes >= 248 are redrawn). */
export function generateKeyMaterial(length = KEY_LENGTH): string {
  const out = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const bytes = randomFromPool(length - filled + 8);
    for (let i = 0; i < bytes.length && filled < length; i++) {
      if (bytes[i] < UNBIASED_LIMIT) out[filled++] = ALPHABET_CODES[bytes[i] % KEY_ALPHABET.length];
    }
  }
  return out.toString('latin1');
}

/** A key without its `sk-` prefix, as it is hashed. */
export function bareKey(key: string): string {
  return key.startsWith(KEY_PREFIX) ? key.slice(KEY_PREFIX.length) : key;
}

/**
 * The lookup hash of a key, with or without its `sk-` prefix. One-shot hashes: a fraction of a microsecond where
 * a Hash object costs two, and the key cache hashes on every call.
 */
export function hashKey(key: string): Buffer {
  return sha256(bareKey(key));
}

/** hashKey in hex, as the key cache is keyed. */
export function keyHashHex(key: string): string {
  return hash('sha256', bareKey(key), 'hex');
}

/** Whether two secrets are equal, in time that does not depend on where they differ. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function sha256(value: string): Buffer {
  return hash('sha256', value, 'buffer');
}

/** The AES-256 key that seals stored keys, derived from GATEWAY_SECRET (KeyCipher, and the worker's key sealer threads). */
export function keyMaterialKey(secret: string): Buffer {
  return derivedKey(secret, 'key-material-v1', 'encrypt stored keys');
}

/** AES-256-GCM with a key derived from GATEWAY_SECRET; stored as iv(12) | tag(16) | ciphertext. */
export class KeyCipher {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = keyMaterialKey(secret);
  }

  encrypt(plain: string): Buffer {
    const iv = randomFromPool(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]);
  }

  decrypt(stored: Buffer): string {
    const decipher = createDecipheriv('aes-256-gcm', this.key, stored.subarray(0, 12));
    decipher.setAuthTag(stored.subarray(12, 28));
    return Buffer.concat([decipher.update(stored.subarray(28)), decipher.final()]).toString('utf8');
  }
}
