/**
 * Why an upstream call failed, as the relay needs to know it: whether another channel may be tried, and what
 * the client may be told. Never carries the upstream's host, key or raw body: `message` is either ours or the
 * upstream's own error message after `sanitizeUpstreamMessage`.
 */
export type UpstreamFailureKind =
  /** DNS, refused, reset before any response, TLS. */
  | 'connect'
  /** No response (or, in a stream, no chunk) within the channel's timeout_ms. */
  | 'timeout'
  /** The upstream answered with a non-2xx status. */
  | 'status'
  /** A 2xx answer we could not read (not JSON, no choices, a stream cut short). */
  | 'protocol'
  /** Our side gave up: the client went away. Never retried, never billed. */
  | 'aborted';

export class UpstreamError extends Error {
  constructor(
    readonly kind: UpstreamFailureKind,
    message: string,
    readonly status: number | null = null,
    /** The upstream's own error code / param (4xx passthrough), sanitised. */
    readonly upstreamCode: string | null = null,
    readonly upstreamParam: string | null = null,
    /** The upstream's `Retry-After` (seconds) on a 429 or 503, when it sent one. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }

  /**
   * Another channel may be tried: connection errors, timeouts, 429 and 5xx (and unreadable 2xx answers), and 401 or
   * 403: the upstream refused the channel's own credential (a wrong key, an expired cloud token, a missing role), a
   * fault of the channel that the client's key has nothing to do with.
   */
  get retryable(): boolean {
    if (this.kind === 'aborted') return false;
    if (this.kind === 'status') return this.status === 429 || this.status === 401 || this.status === 403 || (this.status ?? 0) >= 500;
    return true;
  }
}

const URL_LIKE = /\b(?:https?|wss?):\/\/[^\s'"<>]+/gi;
const HOST_PORT = /\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\blocalhost(?::\d+)?\b/gi;
const KEY_LIKE = /\b(?:sk|pk|key|rk)-[A-Za-z0-9_-]{6,}\b/g;

/**
 * The upstream's error message, safe to show a client: URLs, hosts, IPs, anything key-shaped and the channel's
 * own key and host are removed; control characters dropped; at most 300 characters. Undefined when nothing useful
 * is left.
 */
export function sanitizeUpstreamMessage(message: unknown, secrets: readonly string[]): string | undefined {
  if (typeof message !== 'string') return undefined;
  let m = message;
  for (const s of secrets) if (s && s.length >= 4) m = m.split(s).join('[redacted]');
  m = m.replace(URL_LIKE, '[redacted]').replace(HOST_PORT, '[redacted]').replace(KEY_LIKE, '[redacted]');
  // eslint-disable-next-line no-control-regex
  m = m.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  if (m.length > 300) m = `${m.slice(0, 297)}...`;
  return m || undefined;
}

/** A `Retry-After` header of whole seconds (at most a day), else undefined. */
export function retryAfterSeconds(header: string | string[] | undefined): number | undefined {
  const n = Number(Array.isArray(header) ? header[0] : header);
  return Number.isFinite(n) && n >= 0 && n <= 86_400 ? Math.ceil(n) : undefined;
}
