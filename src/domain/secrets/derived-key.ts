import { hkdfSync } from 'node:crypto';

/**
 * A 32-byte key for one purpose, derived from GATEWAY_SECRET by HKDF-SHA256 (salt `ai-gateway`, info = the purpose):
 * each use of the secret (key encryption, video links, response ids) gets its own key, and every replica with the
 * same secret derives the same one.
 */
export function derivedKey(gatewaySecret: string, purpose: string, what: string): Buffer {
  if (typeof gatewaySecret !== 'string' || gatewaySecret.length === 0) throw new TypeError(`GATEWAY_SECRET is required to ${what}`);
  return Buffer.from(hkdfSync('sha256', gatewaySecret, 'ai-gateway', purpose, 32));
}
