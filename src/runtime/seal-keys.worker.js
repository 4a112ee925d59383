'use strict';
// A thread of the key sealer (src/runtime/key-sealer.ts): generates `count` keys and returns, per key, its lookup
// hash and its sealed form, as one blob of fixed-width records (the layout insertKeyRange writes). Plain JavaScript,
// because a worker thread loads its file as it is, under tsx and jest as well as from dist/. It follows
// generateKeyMaterial, hashKey and KeyCipher.encrypt (src/domain/keys/key-material.ts) exactly; a unit test holds
// the two to that (test/unit/key-sealer.test.ts).
const { createCipheriv, createHash, randomFillSync } = require('node:crypto');
const { workerData } = require('node:worker_threads');

const ALPHABET = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 'latin1');
const UNBIASED_LIMIT = 256 - (256 % ALPHABET.length);
const KEY_LENGTH = 48;
const HASH_BYTES = 32;
const CIPHER_BYTES = 12 + 16 + KEY_LENGTH;
const WIDTH = HASH_BYTES + CIPHER_BYTES;
let aesKey = null;

module.exports = function sealKeys({ count }) {
  aesKey ??= Buffer.from(workerData.aesKey);
  const blob = Buffer.alloc(count * WIDTH);
  // Enough random bytes for every key with room for the redraws (bytes >= 248 are skipped), refilled when short.
  let random = randomFillSync(Buffer.allocUnsafe(count * (KEY_LENGTH + 16) + 64));
  let used = 0;
  const next = () => {
    if (used >= random.length) {
      random = randomFillSync(Buffer.allocUnsafe(64 * 1024));
      used = 0;
    }
    return random[used++];
  };
  const key = Buffer.allocUnsafe(KEY_LENGTH);
  for (let i = 0; i < count; i++) {
    for (let filled = 0; filled < KEY_LENGTH; ) {
      const b = next();
      if (b < UNBIASED_LIMIT) key[filled++] = ALPHABET[b % ALPHABET.length];
    }
    const at = i * WIDTH;
    createHash('sha256').update(key).digest().copy(blob, at);
    const iv = Buffer.allocUnsafe(12);
    for (let j = 0; j < 12; j++) iv[j] = next();
    const cipher = createCipheriv('aes-256-gcm', aesKey, iv);
    const body = Buffer.concat([cipher.update(key), cipher.final()]);
    iv.copy(blob, at + HASH_BYTES);
    cipher.getAuthTag().copy(blob, at + HASH_BYTES + 12);
    body.copy(blob, at + HASH_BYTES + 28);
  }
  key.fill(0);
  return blob;
};
