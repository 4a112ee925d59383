import { createHmac, timingSafeEqual } from 'node:crypto';
import { derivedKey } from '../secrets/derived-key';

/**
 * Result links of video tasks that point at the gateway itself: `/v1/files/video/<taskId>?exp=<unix>&sig=<b64url>`.
 * The spec says download links take no credentials and are valid about 24 hours, so the link carries its own
 * proof: HMAC-SHA256 over (taskId, exp) with a key derived from GATEWAY_SECRET by HKDF (info `video-links`).
 * Every api replica with the same secret verifies every link; rotating the secret invalidates them all.
 */

export const VIDEO_LINK_PATH_PREFIX = '/v1/files/video/';
export const VIDEO_LINK_TTL_SECONDS = 24 * 60 * 60;
const HKDF_INFO = 'video-links';
const SIG_BYTES = 32;
/** base64url of 32 bytes, no padding. */
const SIG_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const EXP_PATTERN = /^[0-9]{1,12}$/;
/** Our task ids: letters, digits, `_`, `-`, `:`, `.` (no `/`, so the id is one path segment). */
const TASK_ID_PATTERN = /^[A-Za-z0-9_\-:.]{1,128}$/;

export interface LinkParts {
  taskId: string;
  /** Unix seconds after which the link is refused. */
  expiresAt: number;
}

export interface SignedLink extends LinkParts {
  sig: string;
  /** Path and query, e.g. `/v1/files/video/vid_123?exp=1700000000&sig=...`; prefix it with the public base URL. */
  path: string;
}

export type LinkFailure = 'malformed' | 'bad_signature' | 'expired';
export type LinkCheck = { ok: true; taskId: string; expiresAt: number } | { ok: false; reason: LinkFailure };

/** What a request hands over: the path parameter and the query values as Fastify parses them. */
export interface LinkInput {
  taskId: unknown;
  exp: unknown;
  sig: unknown;
}

export class VideoLinkSigner {
  private readonly key: Buffer;

  constructor(gatewaySecret: string) {
    this.key = derivedKey(gatewaySecret, HKDF_INFO, 'sign video links');
  }

  private mac(taskId: string, expiresAt: number): Buffer {
    // Length-prefixed fields: no (taskId, exp) pair shares its input with another.
    return createHmac('sha256', this.key).update(`v1\n${taskId.length}:${taskId}\n${expiresAt}`).digest();
  }

  /** Signs a link; `expiresAt` defaults to `nowSeconds` (default: now) + 24 hours. */
  signLink(p: { taskId: string; expiresAt?: number; nowSeconds?: number }): SignedLink {
    if (!TASK_ID_PATTERN.test(p.taskId)) throw new TypeError(`not a task id: ${JSON.stringify(p.taskId)}`);
    const now = p.nowSeconds ?? Math.floor(Date.now() / 1000);
    const expiresAt = p.expiresAt ?? now + VIDEO_LINK_TTL_SECONDS;
    if (!Number.isSafeInteger(expiresAt) || expiresAt < 0 || !EXP_PATTERN.test(String(expiresAt))) throw new TypeError('expiresAt is integer Unix seconds');
    const sig = this.mac(p.taskId, expiresAt).toString('base64url');
    return { taskId: p.taskId, expiresAt, sig, path: `${VIDEO_LINK_PATH_PREFIX}${encodeURIComponent(p.taskId)}?exp=${expiresAt}&sig=${sig}` };
  }

  /**
   * Checks a link: well-formed, signature matching (constant-time), not expired (`exp` is the last valid second).
   * Query values that arrive repeated (arrays) are malformed, not "the first one".
   */
  verifyLink(input: LinkInput, nowSeconds: number = Math.floor(Date.now() / 1000)): LinkCheck {
    const { taskId, exp, sig } = input;
    if (typeof taskId !== 'string' || !TASK_ID_PATTERN.test(taskId)) return { ok: false, reason: 'malformed' };
    if (typeof exp !== 'string' || !EXP_PATTERN.test(exp)) return { ok: false, reason: 'malformed' };
    if (typeof sig !== 'string' || !SIG_PATTERN.test(sig)) return { ok: false, reason: 'malformed' };
    const given = Buffer.from(sig, 'base64url');
    // 43 base64url characters carry 258 bits: reject a non-canonical last character (only one spelling is valid).
    if (given.length !== SIG_BYTES || given.toString('base64url') !== sig) return { ok: false, reason: 'malformed' };
    const expiresAt = Number(exp);
    if (!timingSafeEqual(given, this.mac(taskId, expiresAt))) return { ok: false, reason: 'bad_signature' };
    if (nowSeconds > expiresAt) return { ok: false, reason: 'expired' };
    return { ok: true, taskId, expiresAt };
  }

  /** `verifyLink` over a path and query as received (`/v1/files/video/<id>?exp=..&sig=..`). */
  verifyPath(pathAndQuery: string, nowSeconds?: number): LinkCheck {
    const q = pathAndQuery.indexOf('?');
    const path = q < 0 ? pathAndQuery : pathAndQuery.slice(0, q);
    if (!path.startsWith(VIDEO_LINK_PATH_PREFIX)) return { ok: false, reason: 'malformed' };
    let taskId: string;
    try {
      taskId = decodeURIComponent(path.slice(VIDEO_LINK_PATH_PREFIX.length));
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    const params = new URLSearchParams(q < 0 ? '' : pathAndQuery.slice(q + 1));
    const one = (name: string) => (params.getAll(name).length === 1 ? params.get(name) : undefined);
    return this.verifyLink({ taskId, exp: one('exp'), sig: one('sig') }, nowSeconds);
  }
}
