import { CallbackUrlError } from '../video/errors';

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** X-Callback-Url: an https URL, or http to a loopback host (development); at most 2048 characters. */
export function validateCallbackUrl(value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  if (value.length > 2048) throw new CallbackUrlError('must be at most 2048 characters');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CallbackUrlError('must be an absolute URL');
  }
  if (url.username || url.password) throw new CallbackUrlError('must not carry credentials');
  if (url.protocol === 'https:') return url.toString();
  if (url.protocol === 'http:' && LOOPBACK.test(url.hostname)) return url.toString();
  throw new CallbackUrlError('must be an https URL (or http to a loopback host)');
}
