import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { importSPKI, jwtVerify } from 'jose';
import { anthropicError } from './errors';
import { json } from './reply';
import { countTokens } from './tokens';
import type { Reply } from './types';

/**
 * Google Vertex AI, as the simulator speaks it, checking what Vertex checks:
 *
 * - `POST /token`: Google's OAuth token endpoint for the JWT-bearer grant. The assertion must be signed (RS256) by the
 *   service account's key, name the account as `iss`, this endpoint as `aud`, the cloud-platform scope, and be
 *   current; the token it issues expires.
 * - `GET /computeMetadata/v1/instance/service-accounts/default/token`: the metadata server of a Google Cloud machine,
 *   answering a request with `Metadata-Flavor: Google` with a token of the machine's account.
 * - `/v1/projects/{project}/locations/{region}/publishers/google/models/{model}:{action}` serves the Gemini API route
 *   `/v1beta/models/{model}:{action}`; `.../publishers/anthropic/models/{model}:rawPredict` and `:streamRawPredict`
 *   serve `/v1/messages` (the body must carry `anthropic_version: vertex-2023-10-16` and no `model`), and the
 *   `count-tokens` model serves `/v1/messages/count_tokens`. Every call needs a token this endpoint issued, for the
 *   configured project.
 */

export interface GoogleServiceAccountOptions {
  project: string;
  clientEmail: string;
  /** The service account's public key (SPKI PEM), which assertions are checked against. */
  publicKeyPem: string;
  /** Lifetime of issued tokens. Default 3600. */
  tokenTtlSeconds?: number;
}

export interface VertexTarget {
  path: string;
  publisher: 'google' | 'anthropic';
  model: string;
  stream: boolean;
  refusal?: Reply;
  /** `:predict` on an embedding model, served by `/v1/embeddings`; its texts' token counts once the body is read. */
  predict?: { tokens: number[] };
}

const googleError = (status: number, statusText: string, message: string): Reply => json(status, { error: { code: status, message, status: statusText } });

export function vertexTarget(path: string, project: string | undefined): VertexTarget | undefined {
  const m = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:]+):([A-Za-z]+)$/.exec(path);
  if (!m) return undefined;
  const [, proj, , publisher, rawModel, action] = m;
  const model = decodeURIComponent(rawModel);
  const refuse = (r: Reply) => ({ path, publisher: publisher as 'google' | 'anthropic', model, stream: false, refusal: r });
  if (project !== undefined && decodeURIComponent(proj) !== project) return refuse(googleError(403, 'PERMISSION_DENIED', `Permission denied on resource project ${decodeURIComponent(proj)}.`));
  if (publisher === 'google' && action === 'predict') return { path: '/v1/embeddings', publisher: 'google', model, stream: false, predict: { tokens: [] } };
  if (publisher === 'google') return { path: `/v1beta/models/${rawModel}:${action}`, publisher: 'google', model, stream: action === 'streamGenerateContent' };
  if (action !== 'rawPredict' && action !== 'streamRawPredict') return refuse(googleError(404, 'NOT_FOUND', `Unknown method ${action}.`));
  if (model === 'count-tokens') return { path: '/v1/messages/count_tokens', publisher: 'anthropic', model, stream: false };
  return { path: '/v1/messages', publisher: 'anthropic', model, stream: action === 'streamRawPredict' };
}

/** A Claude body as Vertex takes it: `anthropic_version` and no `model`; made the Messages body the route serves. */
export function vertexAnthropicBody(target: VertexTarget, body: unknown): Reply | undefined {
  if (target.publisher !== 'anthropic' || target.model === 'count-tokens') return undefined;
  const b = body as Record<string, unknown> | undefined;
  if (!b || typeof b !== 'object') return anthropicError(400, { message: 'The request body is not a JSON object.' });
  if (b.anthropic_version !== 'vertex-2023-10-16') return anthropicError(400, { message: 'anthropic_version: Field required (vertex-2023-10-16)' });
  if ('model' in b) return anthropicError(400, { message: 'model: Extra inputs are not permitted' });
  delete b.anthropic_version;
  b.model = target.model;
  if (target.stream) b.stream = true;
  return undefined;
}

/**
 * A `:predict` body for an embedding model (`{instances: [{content, task_type}], parameters: {outputDimensionality,
 * autoTruncate}}`) made the body `/v1/embeddings` serves; Gemini embedding models take one instance a call.
 */
export function vertexPredictBody(target: VertexTarget, body: unknown): Reply | undefined {
  if (!target.predict) return undefined;
  const b = body as { instances?: unknown; parameters?: { outputDimensionality?: unknown } } | undefined;
  const instances = b?.instances;
  if (!Array.isArray(instances) || instances.length === 0 || !instances.every((i) => typeof (i as { content?: unknown })?.content === 'string' && (i as { content: string }).content)) {
    return googleError(400, 'INVALID_ARGUMENT', 'instances: each instance must have a non-empty content.');
  }
  const limit = /gemini-embedding/i.test(target.model) ? 1 : 250;
  if (instances.length > limit) return googleError(400, 'INVALID_ARGUMENT', `Unable to submit request because the model supports up to ${limit} instances per request.`);
  const texts = instances.map((i) => (i as { content: string }).content);
  target.predict.tokens = texts.map((t) => countTokens(t));
  const dims = b?.parameters?.outputDimensionality;
  for (const k of Object.keys(b as object)) delete (b as Record<string, unknown>)[k];
  Object.assign(b as object, { model: target.model, input: texts, ...(typeof dims === 'number' ? { dimensions: dims } : {}) });
  return undefined;
}

/** An embeddings answer as `:predict` answers: one prediction per instance, each with its token count. */
export function vertexPredictReply(target: VertexTarget, reply: Reply): Reply {
  if (!target.predict || reply.status !== 200) return reply;
  const body = JSON.parse(String(reply.pieces.join(''))) as { data: Array<{ embedding: number[] }> };
  const tokens = target.predict.tokens;
  return json(200, {
    predictions: body.data.map((d, i) => ({ embeddings: { values: d.embedding, statistics: { token_count: tokens[i] ?? 0, truncated: false } } })),
    metadata: { billableCharacterCount: 0 },
  });
}

export class SimulatedGoogleAuth {
  mints = 0;
  private readonly issued = new Map<string, number>();

  constructor(private readonly opts: GoogleServiceAccountOptions) {}

  get project(): string {
    return this.opts.project;
  }

  /** `POST /token` with the JWT-bearer grant; the answer, or undefined for another path. */
  async tokenEndpoint(path: string, form: URLSearchParams, tokenUri: string): Promise<Reply | undefined> {
    if (path !== '/token') return undefined;
    const refuse = (description: string) => json(400, { error: 'invalid_grant', error_description: description });
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return json(400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type.' });
    const assertion = form.get('assertion');
    if (!assertion) return refuse('Missing assertion.');
    try {
      const key = await importSPKI(this.opts.publicKeyPem, 'RS256');
      const { payload } = await jwtVerify(assertion, key, { issuer: this.opts.clientEmail, audience: tokenUri, maxTokenAge: '1h', clockTolerance: 60 });
      if (!String(payload.scope ?? '').split(' ').includes('https://www.googleapis.com/auth/cloud-platform')) return json(400, { error: 'invalid_scope', error_description: 'Invalid OAuth scope.' });
    } catch {
      return refuse('Invalid JWT Signature.');
    }
    return this.issue();
  }

  /**
   * The metadata server of a Google Cloud machine (`GET /computeMetadata/v1/instance/service-accounts/default/token`):
   * a token for the machine's service account, to a request that says `Metadata-Flavor: Google`; undefined for
   * another path.
   */
  metadataToken(path: string, headers: IncomingHttpHeaders): Reply | undefined {
    if (path !== '/computeMetadata/v1/instance/service-accounts/default/token') return undefined;
    if (headers['metadata-flavor'] !== 'Google') return { status: 403, headers: { 'content-type': 'text/html' }, pieces: ['Missing Metadata-Flavor:Google header.'], stream: false };
    const reply = this.issue();
    reply.headers['metadata-flavor'] = 'Google';
    return reply;
  }

  private issue(): Reply {
    const ttl = this.opts.tokenTtlSeconds ?? 3600;
    const token = `ya29.sim-${randomBytes(24).toString('base64url')}`;
    this.issued.set(token, Date.now() + ttl * 1000);
    this.mints++;
    return json(200, { access_token: token, expires_in: ttl, token_type: 'Bearer' });
  }

  check(headers: IncomingHttpHeaders): Reply | undefined {
    const auth = headers.authorization;
    const token = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7) : undefined;
    const until = token ? this.issued.get(token) : undefined;
    if (until !== undefined && Date.now() < until) return undefined;
    return googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token.');
  }
}
