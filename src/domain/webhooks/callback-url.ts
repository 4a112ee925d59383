import { OutboundPolicy, refusalOfUrl } from '../outbound/address-policy';
import { CallbackUrlError } from '../video/errors';

/**
 * X-Callback-Url: an absolute https URL of at most 2048 characters whose host is not a literal non-public address
 * (names are resolved and checked again at each delivery). The outbound policy may allow loopback and http.
 */
export function validateCallbackUrl(value: string | undefined, policy: OutboundPolicy): string | null {
  if (value === undefined || value === '') return null;
  if (value.length > 2048) throw new CallbackUrlError('must be at most 2048 characters');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CallbackUrlError('must be an absolute URL');
  }
  const refusal = refusalOfUrl(policy, url);
  if (refusal) throw new CallbackUrlError(refusal);
  return url.toString();
}
