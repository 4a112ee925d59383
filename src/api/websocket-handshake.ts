import type { IncomingHttpHeaders } from 'node:http';

/**
 * The checks `ws` makes of a WebSocket handshake (RFC 6455 §4.2.1), made first by the gateway so that a refused
 * handshake is answered in the route's error format with x-request-id instead of by `ws`, which writes a bare
 * `400 text/html`. Kept as strict as `ws` (any request passing here passes there too): the WebSocket server's
 * `wsClientError` listener is only a backstop for a check added to `ws` later.
 */

/** 16 random bytes in base64, as every client sends (and `ws` requires). */
const KEY = /^[+/0-9A-Za-z]{22}==$/;
/** An RFC 9110 token: what a subprotocol name is. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The versions `ws` speaks; anything else is refused with `Sec-WebSocket-Version: 13, 8`. */
export const SUPPORTED_VERSIONS = '13, 8';

export interface HandshakeProblem {
  message: string;
  param: string;
  /** Headers the refusal carries (the versions the server speaks). */
  headers?: Record<string, string>;
}

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(',') : v);

/** The first reason a handshake would be refused, or null when `ws` will accept it. */
export function handshakeProblem(headers: IncomingHttpHeaders): HandshakeProblem | null {
  const upgrade = single(headers.upgrade);
  if (upgrade === undefined || upgrade.toLowerCase() !== 'websocket') {
    return { message: 'Upgrade: this route upgrades to websocket only', param: 'upgrade' };
  }
  const key = single(headers['sec-websocket-key']);
  if (key === undefined || !KEY.test(key)) {
    return { message: 'Sec-WebSocket-Key: missing or not 16 bytes in base64', param: 'sec-websocket-key' };
  }
  const version = Number(single(headers['sec-websocket-version']));
  if (version !== 13 && version !== 8) {
    return { message: `Sec-WebSocket-Version: missing or unsupported; supported: ${SUPPORTED_VERSIONS}`, param: 'sec-websocket-version', headers: { 'sec-websocket-version': SUPPORTED_VERSIONS } };
  }
  const protocols = single(headers['sec-websocket-protocol']);
  if (protocols !== undefined && !validProtocolList(protocols)) {
    return { message: 'Sec-WebSocket-Protocol: must be a comma-separated list of distinct tokens', param: 'sec-websocket-protocol' };
  }
  return null;
}

function validProtocolList(value: string): boolean {
  // `ws` refuses empty members and whitespace at either end of the value; around a comma it is allowed.
  if (/^[ \t]|[ \t]$/.test(value)) return false;
  const seen = new Set<string>();
  for (const member of value.split(',')) {
    const name = member.replace(/^[ \t]+|[ \t]+$/g, '');
    if (!TOKEN.test(name) || seen.has(name)) return false;
    seen.add(name);
  }
  return true;
}
