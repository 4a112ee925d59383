import type { AzureAdCredentials } from '../../gateway-config/schema';
import { CallAbort } from '../../domain/ports/call-signal';
import { UpstreamError } from '../../domain/ports/upstream-error';
import { readAll, sendUpstream } from '../http';
import type { MintedToken } from './token-cache';

/** The scope of Azure OpenAI (Cognitive Services) data-plane tokens. */
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

/**
 * An Entra ID access token by the OAuth 2.0 client-credentials grant, from `{authority_host}/{tenant_id}/oauth2/v2.0/token`:
 * a plain form POST (the whole of the grant) rather than @azure/identity, whose credential chain the gateway does not
 * need. A refusal is the channel's fault: an UpstreamError the relay fails over on, never carrying the secret or the
 * endpoint's answer.
 */
export async function mintEntraToken(creds: AzureAdCredentials, timeoutMs: number): Promise<MintedToken> {
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: creds.client_id, client_secret: creds.client_secret, scope: COGNITIVE_SERVICES_SCOPE }).toString();
  // Not the caller's signal: every call waiting on this token shares the one mint.
  const res = await sendUpstream({
    url: `${creds.authority_host}/${encodeURIComponent(creds.tenant_id)}/oauth2/v2.0/token`,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body,
    timeoutMs,
    signal: new CallAbort(),
  });
  const text = (await readAll(res)).toString('utf8');
  if (res.status < 200 || res.status >= 300) throw credentialRefused(`the Entra ID token endpoint answered HTTP ${res.status}`);
  let json: { access_token?: unknown; expires_in?: unknown };
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    throw credentialRefused('the Entra ID token endpoint answered no JSON');
  }
  if (typeof json.access_token !== 'string' || json.access_token === '') throw credentialRefused('the Entra ID token endpoint answered no access_token');
  return { token: json.access_token, expiresInSeconds: Number(json.expires_in) || 3600 };
}

/** A cloud credential that could not be turned into a token: the channel's fault (failover, cooldown), a 5xx when no channel is left. */
export function credentialRefused(reason: string): UpstreamError {
  return new UpstreamError('status', `The channel's cloud credentials could not be used: ${reason}`, 503, 'channel_credentials');
}
