import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { importPKCS8, SignJWT } from 'jose';
import type { ChannelConfig } from '../../gateway-config/schema';
import { credentialRefused, requestMetadataToken, requestToken } from './token-endpoint';
import { perChannel } from './per-channel';
import { TokenCache } from './token-cache';

/**
 * Google Vertex AI, channel type `vertex`: Gemini models at
 * `{base_url}/v1/projects/{project}/locations/{region}/publishers/google/models/{model}:{action}` (the Gemini API's
 * body and answers), Anthropic's Claude models at `.../publishers/anthropic/models/{model}:rawPredict` and
 * `:streamRawPredict` (the Messages body without `model`, with `anthropic_version: vertex-2023-10-16`). Calls carry an
 * OAuth access token minted from a service-account key by the RFC 7523 JWT-bearer grant (the assertion signed by
 * `jose`) at the key's own `token_uri`, cached and refreshed one at a time.
 */

export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';

const tokens = new TokenCache();

export function vertexModelUrl(channel: ChannelConfig, publisher: 'google' | 'anthropic', model: string, action: string, query = ''): string {
  const v = channel.vertex!;
  return `${channel.base_url}/v1/projects/${encodeURIComponent(v.project)}/locations/${encodeURIComponent(v.region)}/publishers/${publisher}/models/${encodeURIComponent(model)}:${action}${query}`;
}

interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri?: string;
}

/**
 * The channel's key, or the application default credentials': a service-account file at GOOGLE_APPLICATION_CREDENTIALS,
 * else (null) the metadata server of the Google Cloud machine the gateway runs on.
 */
function serviceAccount(channel: ChannelConfig): ServiceAccountKey | null {
  let text = channel.vertex!.credentials;
  if (text === null) {
    const file = process.env.GOOGLE_APPLICATION_CREDENTIALS;
    if (!file) return null;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      throw credentialRefused('the application default credentials file cannot be read');
    }
  }
  try {
    const key = JSON.parse(text) as ServiceAccountKey & { type?: string };
    if (key.type === 'service_account' && typeof key.client_email === 'string' && typeof key.private_key === 'string') return key;
  } catch {
    // the same refusal below
  }
  throw credentialRefused('the credentials are not a service-account key');
}

async function mintGoogleToken(key: ServiceAccountKey, timeoutMs: number) {
  const tokenUri = key.token_uri ?? DEFAULT_TOKEN_URI;
  let assertion: string;
  try {
    const signingKey = await importPKCS8(key.private_key, 'RS256');
    assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(key.private_key_id ? { kid: key.private_key_id } : {}) })
      .setIssuer(key.client_email)
      .setAudience(tokenUri)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(signingKey);
  } catch {
    throw credentialRefused('the service-account private key cannot sign');
  }
  return requestToken(tokenUri, { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }, timeoutMs, 'the token endpoint');
}

/** The channel's key, parsed once per channel (the application default file read once too), and its cache id. */
const credentialOf = perChannel((channel) => {
  const key = serviceAccount(channel);
  if (!key) return { key, id: `vertex\u0000${channel.name}\u0000metadata-server` };
  return { key, id: `vertex\u0000${channel.name}\u0000${key.client_email}\u0000${createHash('sha256').update(key.private_key).digest('base64url').slice(0, 16)}` };
});

export async function vertexAuthHeaders(channel: ChannelConfig): Promise<Record<string, string>> {
  const { key, id } = credentialOf(channel);
  const token = await tokens.get(id, () => (key ? mintGoogleToken(key, channel.timeout_ms) : requestMetadataToken(channel.timeout_ms)));
  return { authorization: `Bearer ${token}` };
}
