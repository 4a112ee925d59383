import { CallAbort } from '../../domain/ports/call-signal';
import { UpstreamError } from '../../domain/ports/upstream-error';
import { readAll, sendUpstream, type UpstreamHttpResponse } from '../http';
import type { MintedToken } from './token-cache';

/** A cloud credential that could not be turned into a token: the channel's fault (failover, cooldown), a 5xx when no channel is left. */
export function credentialRefused(reason: string): UpstreamError {
  return new UpstreamError('status', `The channel's cloud credentials could not be used: ${reason}`, 503, 'channel_credentials');
}

/**
 * One OAuth 2.0 token request (a form POST) and its `{access_token, expires_in}` answer. Not the caller's signal:
 * every call waiting on this token shares the one request. A refusal never carries the endpoint's answer, which may
 * echo what was sent.
 */
export async function requestToken(url: string, form: Record<string, string>, timeoutMs: number, endpointName: string): Promise<MintedToken> {
  const res = await sendUpstream({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form).toString(),
    timeoutMs,
    signal: new CallAbort(),
  });
  return tokenAnswer(res, endpointName);
}

/**
 * A token from the metadata server of the Google Cloud machine the gateway runs on (Compute Engine, GKE with workload
 * identity, Cloud Run): `GET .../service-accounts/default/token` with `Metadata-Flavor: Google`, at
 * `GCE_METADATA_HOST` when set (as Google's own libraries honour it), else `metadata.google.internal`.
 */
export async function requestMetadataToken(timeoutMs: number): Promise<MintedToken> {
  const host = process.env.GCE_METADATA_HOST || 'metadata.google.internal';
  let res: UpstreamHttpResponse;
  try {
    res = await sendUpstream({
      url: `http://${host}/computeMetadata/v1/instance/service-accounts/default/token`,
      method: 'GET',
      headers: { 'metadata-flavor': 'Google', accept: 'application/json' },
      timeoutMs,
      signal: new CallAbort(),
    });
  } catch {
    throw credentialRefused('no credentials, no GOOGLE_APPLICATION_CREDENTIALS, and no metadata server answered');
  }
  return tokenAnswer(res, 'the metadata server');
}

async function tokenAnswer(res: UpstreamHttpResponse, endpointName: string): Promise<MintedToken> {
  const text = (await readAll(res)).toString('utf8');
  if (res.status < 200 || res.status >= 300) throw credentialRefused(`${endpointName} answered HTTP ${res.status}`);
  let json: { access_token?: unknown; expires_in?: unknown };
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    throw credentialRefused(`${endpointName} answered no JSON`);
  }
  if (typeof json.access_token !== 'string' || json.access_token === '') throw credentialRefused(`${endpointName} answered no access_token`);
  return { token: json.access_token, expiresInSeconds: Number(json.expires_in) || 3600 };
}
