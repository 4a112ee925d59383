import { hashKey, KEY_LENGTH, KeyCipher } from '../../src/domain/keys/key-material';
import { inlineKeySealer, type KeySealer, SEALED_CIPHER_BYTES, SEALED_HASH_BYTES, SEALED_KEY_BYTES } from '../../src/domain/keys/key-sealer';
import { createThreadedKeySealer } from '../../src/runtime/key-sealer';

/**
 * Both key sealers make what insertKeyRange stores: per key its SHA-256 lookup hash and its AES-256-GCM sealed form,
 * which KeyCipher (the api's) opens to a 48-character key of the key alphabet whose hash is that hash. The threaded
 * one runs plain JavaScript of its own (src/runtime/seal-keys.worker.js): this holds it to the TypeScript's rules.
 */
const SECRET = 'key-sealer-test-secret-key-sealer-test-secret';

function openAll(blob: Buffer, count: number): string[] {
  expect(blob.length).toBe(count * SEALED_KEY_BYTES);
  const cipher = new KeyCipher(SECRET);
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const at = i * SEALED_KEY_BYTES;
    const hash = blob.subarray(at, at + SEALED_HASH_BYTES);
    const key = cipher.decrypt(blob.subarray(at + SEALED_HASH_BYTES, at + SEALED_HASH_BYTES + SEALED_CIPHER_BYTES));
    expect(key).toMatch(new RegExp(`^[A-Za-z0-9]{${KEY_LENGTH}}$`));
    expect(hashKey(key).equals(hash)).toBe(true);
    keys.push(key);
  }
  return keys;
}

describe.each([
  ['in this thread', () => inlineKeySealer(new KeyCipher(SECRET))],
  ['on threads of its own', () => createThreadedKeySealer(SECRET, { threads: 1 })],
])('key sealer %s', (_name, make: () => KeySealer) => {
  let sealer: KeySealer;
  beforeAll(() => {
    sealer = make();
  });
  afterAll(() => sealer.close());

  it('seals keys the api can open, each with its lookup hash, all different', async () => {
    const keys = openAll(await sealer.seal(500), 500);
    expect(new Set(keys).size).toBe(500);
  });

  it('uses every character of the alphabet, and seals nothing for no keys', async () => {
    const chars = new Set(openAll(await sealer.seal(200), 200).join(''));
    expect(chars.size).toBe(62);
    expect((await sealer.seal(0)).length).toBe(0);
  });
});
