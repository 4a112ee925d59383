import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkedAddresses, OutboundPolicy, OutboundRefusedError, refusalOfUrl } from '../domain/outbound/address-policy';
import type { OutboundPost, OutboundResult } from '../domain/ports/outbound';

const systemResolve = async (host: string) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * The socket connects to the address this lookup checked, so a DNS answer that changes between the check and the
 * connection (rebinding) cannot reach a refused address.
 */
function checkingLookup(policy: OutboundPolicy): LookupFunction {
  const resolve = policy.resolve ?? systemResolve;
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    checkedAddresses(policy, hostname, resolve).then(
      (addresses) => {
        const entries = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
        if (options.all) callback(null, entries);
        else callback(null, entries[0].address, entries[0].family);
      },
      (err) => callback(err),
    );
  }) as LookupFunction;
}

/**
 * POSTs to a URL the policy allows: the scheme and literal address are checked first, every resolved address is
 * checked, redirects are not followed (a 3xx is the answer), and the whole exchange is bounded by `timeoutMs`.
 */
export function postOutbound(policy: OutboundPolicy, target: string, req: OutboundPost): Promise<OutboundResult> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return Promise.resolve({ ok: false, status: null, error: 'refused', reason: 'not a URL' });
  }
  const refusal = refusalOfUrl(policy, url);
  if (refusal) return Promise.resolve({ ok: false, status: null, error: 'refused', reason: refusal });
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const request = client.request(
      url,
      {
        method: 'POST',
        headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
        lookup: checkingLookup(policy),
        agent: false,
        signal: AbortSignal.timeout(req.timeoutMs),
      },
      (res) => {
        // The receiver's body is not read: only its status matters, and a large one must not cost us.
        res.destroy();
        resolve({ ok: true, status: res.statusCode ?? 0 });
      },
    );
    request.on('error', (err: Error & { cause?: unknown }) => {
      if (err instanceof OutboundRefusedError) resolve({ ok: false, status: null, error: 'refused', reason: err.message });
      else if (err.name === 'AbortError' || (err.cause as Error | undefined)?.name === 'TimeoutError') resolve({ ok: false, status: null, error: 'timeout' });
      else resolve({ ok: false, status: null, error: 'failed' });
    });
    request.end(req.body);
  });
}
