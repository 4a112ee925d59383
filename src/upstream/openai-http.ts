import { retryAfterSeconds, sanitizeUpstreamMessage, UpstreamError } from '../domain/ports/upstream-error';
import type { UpstreamCall } from '../domain/ports/upstream';
import { readErrorMember, sendUpstream, type UpstreamHttpResponse, withChannelHeaders } from './http';
import { azureAuthHeaders, azureUrl, forgetAzureToken } from './cloud/azure';

/**
 * Calls to an OpenAI-compatible upstream: `${base_url}${path}` with `Authorization: Bearer <key>` (none when the key
 * is ''), the channel's own headers, and its error answers turned into UpstreamErrors that never carry its body.
 */

export function headersFor(call: UpstreamCall, contentType: string, accept = 'application/json'): Record<string, string> {
  const h: Record<string, string> = { 'content-type': contentType, accept, 'x-request-id': call.requestId };
  if (call.channel.key) h.authorization = `Bearer ${call.channel.key}`;
  return withChannelHeaders(h, call.channel);
}

/** An `azure` channel's URL and credentials (cloud/azure.ts); the same body and headers otherwise. */
async function azureRequest(call: UpstreamCall, path: string, contentType: string, accept = 'application/json') {
  const own = { 'content-type': contentType, accept, 'x-request-id': call.requestId, ...(await azureAuthHeaders(call.channel)) };
  return { url: azureUrl(call.channel, path, call.upstreamModel), headers: withChannelHeaders(own, call.channel) };
}

/** One call to `${base_url}${path}` (an Azure resource's address for `azure`); a non-2xx answer is thrown as an UpstreamError. */
export async function send(call: UpstreamCall, method: 'GET' | 'POST' | 'DELETE', path: string, body: string | Buffer | undefined, contentType: string, accept?: string): Promise<UpstreamHttpResponse> {
  const target =
    call.channel.type === 'azure' ? await azureRequest(call, path, contentType, accept) : { url: `${call.channel.base_url}${path}`, headers: headersFor(call, contentType, accept) };
  const res = await sendUpstream({ ...target, method, body, timeoutMs: call.channel.timeout_ms, signal: call.signal });
  if (res.status >= 200 && res.status < 300) return res;
  if (res.status === 401 && call.channel.type === 'azure') forgetAzureToken(call.channel);
  throw await statusError(res, call);
}

export function post(call: UpstreamCall, path: string, body: string | Buffer, contentType: string, accept?: string): Promise<UpstreamHttpResponse> {
  return send(call, 'POST', path, body, contentType, accept);
}

/** A non-2xx answer as an UpstreamError: the upstream's code/param/message, sanitised; never its raw body. */
export async function statusError(res: UpstreamHttpResponse, call: UpstreamCall): Promise<UpstreamError> {
  const err = (await readErrorMember(res)) as
    | { message?: unknown; code?: unknown; param?: unknown; type?: unknown }
    | string
    | undefined;
  const secrets = [call.channel.key, call.channel.base_url, safeHost(call.channel.base_url), call.channel.azure_ad?.client_secret ?? ''];
  const rawMessage = typeof err === 'string' ? err : err?.message;
  const message = sanitizeUpstreamMessage(rawMessage, secrets) ?? `The upstream answered HTTP ${res.status}`;
  const code = typeof err === 'object' ? codeText(err.code ?? err.type, secrets) : null;
  const param = typeof err === 'object' ? codeText(err.param, secrets) : null;
  return new UpstreamError('status', message, res.status, code, param, retryAfterSeconds(res.headers['retry-after']));
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

/** A short identifier-like code or param; anything else is dropped. */
function codeText(v: unknown, secrets: readonly string[]): string | null {
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  const s = sanitizeUpstreamMessage(String(v), secrets);
  return s && /^[\w.[\]-]{1,100}$/.test(s) ? s : null;
}

export { readJsonObject as readJson } from './http';
