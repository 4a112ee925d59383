import ipaddr from 'ipaddr.js';

/**
 * Where the gateway may send requests it makes on a user's behalf (webhooks now, URL fetches later): public
 * unicast addresses over https. The embedded default (`npm start` on PGlite, one developer's machine) may also
 * call loopback over http; an operator lists further hosts, addresses or CIDR ranges in OUTBOUND_ALLOWLIST.
 */
export interface OutboundPolicy {
  /** Loopback addresses and plain http are allowed (the embedded default). */
  allowLoopback: boolean;
  /** Host names (exact), IP addresses and CIDR ranges that may be called even when not public, over http too. */
  allow: readonly string[];
  /** Resolves a host name to every address it has; tests substitute a resolver of their own. */
  resolve?: (host: string) => Promise<string[]>;
}

export const STRICT_OUTBOUND: OutboundPolicy = { allowLoopback: false, allow: [] };

/** A destination the policy refuses; the reason names the class of address, never what answered there. */
export class OutboundRefusedError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'OutboundRefusedError';
  }
}

type Parsed = ipaddr.IPv4 | ipaddr.IPv6;

/** `[::1]` as URL.hostname gives it, or a bare address; null when the host is a name. */
export function ipLiteral(host: string): Parsed | null {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (!ipaddr.isValid(bare)) return null;
  // IPv4-mapped IPv6 (::ffff:127.0.0.1) is judged as the IPv4 address it reaches.
  return ipaddr.process(bare);
}

function inAllowlist(policy: OutboundPolicy, host: string, ip: Parsed | null): boolean {
  const name = host.toLowerCase();
  for (const entry of policy.allow) {
    if (entry.includes('/')) {
      if (!ip) continue;
      const [range, bits] = ipaddr.parseCIDR(entry);
      const candidate = ip.kind() === range.kind() ? ip : ip.kind() === 'ipv4' ? (ip as ipaddr.IPv4).toIPv4MappedAddress() : null;
      if (candidate && candidate.match(range, bits)) return true;
    } else if (ipaddr.isValid(entry)) {
      if (ip && ipaddr.process(entry).toNormalizedString() === ip.toNormalizedString()) return true;
    } else if (entry.toLowerCase() === name) {
      return true;
    }
  }
  return false;
}

/** Why an address may not be called, or null when it may. */
export function refusalOfAddress(policy: OutboundPolicy, ip: Parsed, host = ip.toString()): string | null {
  if (inAllowlist(policy, host, ip)) return null;
  const range = ip.range();
  if (range === 'unicast') return null;
  if (range === 'loopback' && policy.allowLoopback) return null;
  return `not a public address (${range})`;
}

const isLocalhostName = (host: string) => /^(localhost|.+\.localhost)\.?$/i.test(host);

/**
 * Checks what can be checked without resolving: the scheme, credentials, literal addresses in every form the
 * URL parser accepts (it normalises 2130706433, 0x7f000001 and 127.1 to 127.0.0.1) and `localhost` names.
 */
export function refusalOfUrl(policy: OutboundPolicy, url: URL): string | null {
  if (url.username || url.password) return 'must not carry credentials';
  const ip = ipLiteral(url.hostname);
  const listed = inAllowlist(policy, url.hostname, ip);
  const local = ip?.range() === 'loopback' || isLocalhostName(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (listed || (policy.allowLoopback && local)))) {
    return policy.allowLoopback ? 'must be an https URL (or http to a loopback host)' : 'must be an https URL';
  }
  if (listed) return null;
  if (isLocalhostName(url.hostname)) return policy.allowLoopback ? null : 'not a public address (loopback)';
  return ip ? refusalOfAddress(policy, ip, url.hostname) : null;
}

/**
 * The addresses a host may be called at, every one checked: a name any of whose addresses is refused is refused
 * as a whole (an attacker's DNS could answer with either).
 */
export async function checkedAddresses(policy: OutboundPolicy, host: string, resolve: (host: string) => Promise<string[]>): Promise<string[]> {
  const literal = ipLiteral(host);
  const addresses = literal ? [literal.toString()] : isLocalhostName(host) ? ['127.0.0.1'] : await resolve(host);
  if (addresses.length === 0) throw new OutboundRefusedError('the host has no address');
  for (const a of addresses) {
    const ip = ipLiteral(a);
    const refusal = ip ? refusalOfAddress(policy, ip, host) : 'not an address';
    if (refusal) throw new OutboundRefusedError(refusal);
  }
  return addresses;
}
