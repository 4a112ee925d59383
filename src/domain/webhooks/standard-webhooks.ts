import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signing per the Standard Webhooks convention (https://www.standardwebhooks.com/), so receivers
 * verify with any Standard Webhooks library, the `openai` SDK's `webhooks.unwrap` / `verifySignature`
 * included:
 *
 *   webhook-id:        a unique message id (the same on every retry of one event)
 *   webhook-timestamp: integer Unix seconds of this attempt
 *   webhook-signature: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` (space-separated when several)
 *
 * The HMAC key is the base64-decoded part of the account's secret after `whsec_`. Pure: no I/O, no clock
 * unless a caller leaves `nowSeconds` out of `verifyWebhook`.
 */

export const WEBHOOK_SECRET_PREFIX = 'whsec_';
export const WEBHOOK_SIGNATURE_VERSION = 'v1';
/** Default secret size; the convention asks for 24 to 64 random bytes. */
export const WEBHOOK_SECRET_BYTES = 32;
export const MIN_WEBHOOK_SECRET_BYTES = 24;
export const MAX_WEBHOOK_SECRET_BYTES = 64;
/** How far a timestamp may be from now, either way, when verifying (the convention's and the SDKs' 5 minutes). */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/** A type alias, not an interface: it is assignable to `Record<string, string>` (fetch, node http, SDK helpers). */
export type WebhookHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

/** A new `whsec_<base64>` secret of `bytes` random bytes (24..64, default 32). */
export function generateWebhookSecret(bytes: number = WEBHOOK_SECRET_BYTES): string {
  if (!Number.isInteger(bytes) || bytes < MIN_WEBHOOK_SECRET_BYTES || bytes > MAX_WEBHOOK_SECRET_BYTES) {
    throw new RangeError(`a webhook secret is ${MIN_WEBHOOK_SECRET_BYTES} to ${MAX_WEBHOOK_SECRET_BYTES} bytes, got ${bytes}`);
  }
  return WEBHOOK_SECRET_PREFIX + randomBytes(bytes).toString('base64');
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The HMAC key of a `whsec_<base64>` secret; throws on anything else (a bad secret is a programming error). */
export function webhookSecretKey(secret: string): Buffer {
  if (typeof secret !== 'string' || !secret.startsWith(WEBHOOK_SECRET_PREFIX)) {
    throw new TypeError(`a webhook secret starts with ${WEBHOOK_SECRET_PREFIX}`);
  }
  const b64 = secret.slice(WEBHOOK_SECRET_PREFIX.length);
  if (!BASE64.test(b64)) throw new TypeError('a webhook secret is whsec_ followed by standard base64');
  const key = Buffer.from(b64, 'base64');
  if (key.length < MIN_WEBHOOK_SECRET_BYTES || key.length > MAX_WEBHOOK_SECRET_BYTES) {
    throw new TypeError(`a webhook secret decodes to ${MIN_WEBHOOK_SECRET_BYTES} to ${MAX_WEBHOOK_SECRET_BYTES} bytes, got ${key.length}`);
  }
  return key;
}

/** Message ids: the convention's `msg_...` style or any token without `.`, spaces or control characters. */
const MESSAGE_ID = /^[A-Za-z0-9_\-:]{1,128}$/;

function signedContent(id: string, timestamp: string, body: string | Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), typeof body === 'string' ? Buffer.from(body, 'utf8') : body]);
}

function hmac(key: Buffer, id: string, timestamp: string, body: string | Buffer): Buffer {
  return createHmac('sha256', key).update(signedContent(id, timestamp, body)).digest();
}

/**
 * The three headers of one delivery attempt. `body` is the exact bytes sent (sign the serialized JSON once and
 * send that same string). `timestampSeconds` is the attempt time in integer Unix seconds.
 */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string | Buffer): WebhookHeaders {
  if (!MESSAGE_ID.test(id)) throw new TypeError('a webhook id is 1 to 128 characters of [A-Za-z0-9_-:]');
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) throw new TypeError('a webhook timestamp is integer Unix seconds');
  const timestamp = String(timestampSeconds);
  const sig = hmac(webhookSecretKey(secret), id, timestamp, body).toString('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `${WEBHOOK_SIGNATURE_VERSION},${sig}` };
}

export type WebhookVerifyFailure = 'missing_headers' | 'bad_timestamp' | 'too_old' | 'too_new' | 'bad_signature';
export type WebhookVerifyResult = { ok: true } | { ok: false; reason: WebhookVerifyFailure };

export interface VerifyOptions {
  /** Default: the current time. */
  nowSeconds?: number;
  /** Default 300. */
  toleranceSeconds?: number;
}

/** Reads a header from a plain object in any case (node's IncomingHttpHeaders, fetch's Headers turned into an object). */
function header(headers: Record<string, string | string[] | undefined> | Headers, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const h = headers as Record<string, string | string[] | undefined>;
  for (const k of Object.keys(h)) {
    if (k.toLowerCase() !== name) continue;
    const v = h[k];
    return Array.isArray(v) ? v.join(' ') : v;
  }
  return undefined;
}

/**
 * Checks a delivery the way a receiver does: the timestamp within the tolerance, and any one of the
 * space-separated `v1,<sig>` signatures matching (compared in constant time). Other versions are skipped.
 */
export function verifyWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined> | Headers,
  body: string | Buffer,
  opts: VerifyOptions = {},
): WebhookVerifyResult {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signature = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signature) return { ok: false, reason: 'missing_headers' };
  if (!/^\d{1,15}$/.test(timestamp)) return { ok: false, reason: 'bad_timestamp' };
  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = opts.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  const ts = Number(timestamp);
  if (now - ts > tolerance) return { ok: false, reason: 'too_old' };
  if (ts - now > tolerance) return { ok: false, reason: 'too_new' };
  const expected = hmac(webhookSecretKey(secret), id, timestamp, body);
  let match = false;
  for (const part of signature.split(' ')) {
    const comma = part.indexOf(',');
    if (comma < 0 || part.slice(0, comma) !== WEBHOOK_SIGNATURE_VERSION) continue;
    const b64 = part.slice(comma + 1);
    if (!BASE64.test(b64)) continue;
    const given = Buffer.from(b64, 'base64');
    // Keep checking after a match: the time taken does not depend on which signature matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) match = true;
  }
  return match ? { ok: true } : { ok: false, reason: 'bad_signature' };
}
