import type { AzureAdCredentials } from '../../gateway-config/schema';
import type { MintedToken } from './token-cache';
import { requestToken } from './token-endpoint';

/** The scope of Azure OpenAI (Cognitive Services) data-plane tokens. */
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

/**
 * An Entra ID access token by the OAuth 2.0 client-credentials grant, from `{authority_host}/{tenant_id}/oauth2/v2.0/token`:
 * a plain form POST (the whole of the grant) rather than @azure/identity, whose credential chain the gateway does not
 * need. A refusal is the channel's fault: an UpstreamError the relay fails over on, never carrying the secret.
 */
export function mintEntraToken(creds: AzureAdCredentials, timeoutMs: number): Promise<MintedToken> {
  return requestToken(
    `${creds.authority_host}/${encodeURIComponent(creds.tenant_id)}/oauth2/v2.0/token`,
    { grant_type: 'client_credentials', client_id: creds.client_id, client_secret: creds.client_secret, scope: COGNITIVE_SERVICES_SCOPE },
    timeoutMs,
    'the Entra ID token endpoint',
  );
}
