import { createHash } from 'node:crypto';
import type { ChannelConfig } from '../../gateway-config/schema';
import { mintEntraToken } from './entra';
import { perChannel } from './per-channel';
import { TokenCache } from './token-cache';

/**
 * Azure OpenAI, channel type `azure`: the OpenAI wire format at Azure's addresses, with Azure's credentials.
 *
 * - `api_version` set (not `v1`): the deployment paths, `{base_url}/openai/deployments/{deployment}/chat/completions
 *   ?api-version=...` (embeddings, images, audio alike), the deployment being the model's mapped id; the Responses
 *   API at `{base_url}/openai/responses?api-version=...`.
 * - `api_version` omitted or `v1`: the v1 API, `{base_url}/openai/v1/chat/completions`, the deployment in `model`.
 * - `key` goes as `api-key`; `azure_ad` mints Entra ID tokens (client credentials), cached and refreshed one at a time.
 */

const tokens = new TokenCache();

function isV1(channel: ChannelConfig): boolean {
  return channel.api_version === undefined || channel.api_version === 'v1';
}

/** The URL of an OpenAI API path (`/chat/completions`, `/responses/{id}?...`) on an Azure resource. */
export function azureUrl(channel: ChannelConfig, path: string, deployment: string): string {
  const base = channel.base_url;
  if (isV1(channel)) return `${base}/openai/v1${path}`;
  const [pathname, query] = path.split('?', 2) as [string, string | undefined];
  const version = `api-version=${encodeURIComponent(channel.api_version!)}`;
  const withVersion = query ? `${query}&${version}` : version;
  // The Responses API is per resource, not per deployment: the deployment goes in `model`.
  if (pathname.startsWith('/responses')) return `${base}/openai${pathname}?${withVersion}`;
  return `${base}/openai/deployments/${encodeURIComponent(deployment)}${pathname}?${withVersion}`;
}

/** One cache entry per credential (a changed secret after a reload mints anew); never the secret itself. */
const credentialId = perChannel((channel) => {
  const ad = channel.azure_ad!;
  const secret = createHash('sha256').update(ad.client_secret).digest('base64url').slice(0, 16);
  return `azure\u0000${channel.name}\u0000${ad.authority_host}\u0000${ad.tenant_id}\u0000${ad.client_id}\u0000${secret}`;
});

/** The credential headers of a call: `api-key`, or an Entra ID bearer token. */
export async function azureAuthHeaders(channel: ChannelConfig): Promise<Record<string, string>> {
  if (!channel.azure_ad) return channel.key ? { 'api-key': channel.key } : {};
  const ad = channel.azure_ad;
  const token = await tokens.get(credentialId(channel), () => mintEntraToken(ad, channel.timeout_ms));
  return { authorization: `Bearer ${token}` };
}

/** The cloud refused a token (revoked, or the app's role removed): the next call mints a new one. */
export function forgetAzureToken(channel: ChannelConfig): void {
  if (channel.azure_ad) tokens.forget(credentialId(channel));
}
