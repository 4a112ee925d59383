import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { json } from './reply';
import { OPENAI_VIDEO_PREFIX } from './video-openai';
import type { Reply } from './types';

/**
 * Azure OpenAI, as the simulator speaks it: the OpenAI routes at Azure's addresses, checking what Azure checks.
 *
 * - `/openai/deployments/{deployment}/{path}?api-version=...` (the version is required) and `/openai/responses...`
 *   serve the OpenAI route `/v1/{path}`, the deployment standing in for `model`; `/openai/v1/{path}` serves it as is.
 * - Credentials: `api-key` equal to the simulator's key, or `Authorization: Bearer` with a token the simulator's own
 *   Entra ID endpoint issued (`POST /{tenant}/oauth2/v2.0/token`, client credentials) and that has not expired.
 *   Anything else is Azure's 401.
 * - A prompt containing `sim:content_filter` is refused as Azure's content filter refuses (400 `content_filter`,
 *   with its `innererror`).
 */

export interface AzureAdOptions {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** Lifetime of issued tokens. Default 3600. */
  tokenTtlSeconds?: number;
}

export interface AzureTarget {
  /** The OpenAI route it serves. */
  path: string;
  /** The deployment of a deployment path, which the body's `model` becomes. */
  deployment?: string;
  /** Refused before any route: a deployment path without api-version. */
  refusal?: Reply;
}

const azureError = (status: number, code: string, message: string, extra: Record<string, unknown> = {}): Reply => json(status, { error: { code, message, ...extra } });

/** The OpenAI route an Azure address serves, or undefined for a path that is not Azure's. */
export function azureTarget(path: string, query: string): AzureTarget | undefined {
  // `/openai/v1/videos...` is the simulator's OpenAI video API (video-openai.ts), not an Azure address.
  if (path === OPENAI_VIDEO_PREFIX || path.startsWith(`${OPENAI_VIDEO_PREFIX}/`)) return undefined;
  if (path.startsWith('/openai/v1/')) return { path: `/v1/${path.slice('/openai/v1/'.length)}` };
  const hasVersion = new URLSearchParams(query).has('api-version');
  const noVersion = azureError(404, '404', 'Resource not found');
  if (path.startsWith('/openai/responses')) return hasVersion ? { path: `/v1${path.slice('/openai'.length)}` } : { path, refusal: noVersion };
  const m = /^\/openai\/deployments\/([^/]+)(\/.+)$/.exec(path);
  if (!m) return undefined;
  if (!hasVersion) return { path, refusal: noVersion };
  return { path: `/v1${m[2]}`, deployment: decodeURIComponent(m[1]) };
}

/** Azure's content filter on a prompt that asks for it. */
export function contentFilter(body: unknown): Reply | undefined {
  if (!JSON.stringify(body ?? '').includes('sim:content_filter')) return undefined;
  return azureError(400, 'content_filter', "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", {
    param: 'prompt',
    status: 400,
    innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { hate: { filtered: true, severity: 'high' } } },
  });
}

/** The simulator's Entra ID: issues client-credentials tokens and checks them. */
export class SimulatedEntra {
  /** Tokens issued so far (what the one-refresh-at-a-time test counts). */
  mints = 0;
  private readonly issued = new Map<string, number>();

  constructor(private readonly opts: AzureAdOptions) {}

  /** `POST /{tenant}/oauth2/v2.0/token`, or undefined for another path. */
  tokenEndpoint(path: string, form: URLSearchParams): Reply | undefined {
    const m = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(path);
    if (!m) return undefined;
    const refuse = (code: string, description: string) => json(code === 'invalid_client' ? 401 : 400, { error: code, error_description: description });
    if (decodeURIComponent(m[1]) !== this.opts.tenantId) return refuse('invalid_request', 'AADSTS90002: Tenant not found.');
    if (form.get('grant_type') !== 'client_credentials') return refuse('unsupported_grant_type', 'AADSTS70003: The grant type is not supported.');
    if (form.get('scope') !== 'https://cognitiveservices.azure.com/.default') return refuse('invalid_scope', 'AADSTS70011: The provided scope is not valid.');
    if (form.get('client_id') !== this.opts.clientId || form.get('client_secret') !== this.opts.clientSecret) {
      return refuse('invalid_client', 'AADSTS7000215: Invalid client secret provided.');
    }
    const ttl = this.opts.tokenTtlSeconds ?? 3600;
    const token = `sim-entra-${randomBytes(24).toString('base64url')}`;
    this.issued.set(token, Date.now() + ttl * 1000);
    this.mints++;
    return json(200, { token_type: 'Bearer', expires_in: ttl, ext_expires_in: ttl, access_token: token });
  }

  valid(token: string): boolean {
    const until = this.issued.get(token);
    return until !== undefined && Date.now() < until;
  }
}

/** Azure's credential check: `api-key`, or an Entra bearer token; undefined when the call may go on. */
export function checkAzureAuth(headers: IncomingHttpHeaders, apiKey: string | undefined, entra: SimulatedEntra | undefined): Reply | undefined {
  const key = headers['api-key'];
  if (typeof key === 'string') {
    return apiKey === undefined || key === apiKey ? undefined : azureError(401, '401', 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.');
  }
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) {
    if (entra?.valid(auth.slice(7))) return undefined;
    return azureError(401, 'PermissionDenied', 'The access token is invalid or has expired.');
  }
  return apiKey === undefined && !entra ? undefined : azureError(401, '401', 'Access denied due to missing subscription key or token.');
}
