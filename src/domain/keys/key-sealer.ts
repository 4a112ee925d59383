import { generateKeyMaterial, hashKey, KEY_LENGTH, type KeyCipher } from './key-material';

/**
 * Makes the material of new keys in bulk: for each key its lookup hash (SHA-256) and its sealed form (AES-256-GCM,
 * iv | tag | ciphertext), as one blob of fixed-width records. A million keys are seconds of CPU: the composition
 * root gives the worker a sealer that runs on threads of its own (src/runtime/key-sealer.ts), so the process that
 * answers requests never waits behind key generation; this in-process one serves tests and one-off tools.
 */
export interface KeySealer {
  seal(count: number): Promise<Buffer>;
  close(): Promise<void>;
}

export const SEALED_HASH_BYTES = 32;
export const SEALED_CIPHER_BYTES = 12 + 16 + KEY_LENGTH;
export const SEALED_KEY_BYTES = SEALED_HASH_BYTES + SEALED_CIPHER_BYTES;

export function inlineKeySealer(cipher: KeyCipher): KeySealer {
  return {
    async seal(count) {
      const blob = Buffer.allocUnsafe(count * SEALED_KEY_BYTES);
      for (let i = 0; i < count; i++) {
        const key = generateKeyMaterial();
        hashKey(key).copy(blob, i * SEALED_KEY_BYTES);
        const sealed = cipher.encrypt(key);
        if (sealed.length !== SEALED_CIPHER_BYTES) throw new Error(`stored key is ${sealed.length} bytes, expected ${SEALED_CIPHER_BYTES}`);
        sealed.copy(blob, i * SEALED_KEY_BYTES + SEALED_HASH_BYTES);
      }
      return blob;
    },
    close: async () => {},
  };
}
