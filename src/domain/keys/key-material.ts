import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { derivedKey } from '../secrets/derived-key';

const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const KEY_LENGTH = 48;
export const KEY_PREFIX = 'sk-';

/** 48 characters from a CSPRNG, without modulo bias (bytes >= 248 are redrawn). */
export function generateKeyMaterial(length = KEY_LENGTH): string {
  const limit = 256 - (256 % KEY_ALPHABET.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += KEY_ALPHABET[byte % KEY_ALPHABET.length];
      if (out.length === length) break;
    }
  }
  return out;
}

/** The lookup hash of a key, with or without its `sk-` prefix. */
export function hashKey(key: string): Buffer {
  const bare = key.startsWith(KEY_PREFIX) ? key.slice(KEY_PREFIX.length) : key;
  return createHash('sha256').update(bare).digest();
}

/** Whether two secrets are equal, in time that does not depend on where they differ. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** AES-256-GCM with a key derived from GATEWAY_SECRET; stored as iv(12) | tag(16) | ciphertext. */
export class KeyCipher {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = derivedKey(secret, 'key-material-v1', 'encrypt stored keys');
  }

  encrypt(plain: string): Buffer {
    const iv = randomBytes(12);
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
