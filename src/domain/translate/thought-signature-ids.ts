import { randomBytes } from 'node:crypto';

/**
 * Gemini 3 signs the thinking behind a function call (`thoughtSignature`) and refuses the next turn unless the call
 * comes back with it. Chat, Messages and Responses clients have no field for it, but they all send a tool call's id
 * back untouched: the signature rides in the id (`gts_<8 random>_<signature, base64url>`, only `[A-Za-z0-9_-]`,
 * which every client's id pattern accepts) and is restored when the id returns.
 */
const PREFIX = 'gts_';
const NONCE = 8;

/** A tool call id; carries `signature` when there is one. */
export function toolCallId(signature?: string): string {
  const nonce = randomBytes(6).toString('base64url').replace(/[-_]/g, 'x').slice(0, NONCE);
  if (!signature) return `call_${nonce}`;
  return `${PREFIX}${nonce}_${Buffer.from(signature, 'base64').toString('base64url')}`;
}

/** The signature an id made by toolCallId carries (base64, as Gemini sent it); undefined for any other id. */
export function signatureOf(id: string | undefined): string | undefined {
  if (!id || !id.startsWith(PREFIX) || id[PREFIX.length + NONCE] !== '_') return undefined;
  const sig = id.slice(PREFIX.length + NONCE + 1);
  return sig ? Buffer.from(sig, 'base64url').toString('base64') : undefined;
}
