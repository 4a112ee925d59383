import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { json } from './reply';
import type { Reply } from './types';

/**
 * AWS Bedrock's runtime, as the simulator speaks it, checking what Bedrock checks:
 *
 * - `POST /model/{modelId}/invoke` and `/invoke-with-response-stream` serve `/v1/messages` for the model, taking the
 *   Messages body as Bedrock takes it: `anthropic_version: bedrock-2023-05-31`, no `model`. The streamed answer is an
 *   AWS event stream (`application/vnd.amazon.eventstream`) of `chunk` events, each carrying one Messages event in
 *   `bytes`, encoded by the SDK's own codec.
 * - Every request is signed with Signature V4 for service `bedrock` by the configured access key: the signature is
 *   computed again over what arrived (a wrong secret, a body changed after signing, a date more than five minutes
 *   off are each refused 403 as Bedrock refuses them), or carries the configured Bedrock API key as a bearer token.
 */

export interface BedrockOptions {
  accessKeyId: string;
  secretAccessKey: string;
  /** A Bedrock API key accepted as `Authorization: Bearer`. */
  apiKey?: string;
}

export interface BedrockTarget {
  path: string;
  model: string;
  stream: boolean;
}

const awsError = (status: number, type: string, message: string): Reply => {
  const r = json(status, { message });
  r.headers['x-amzn-errortype'] = `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`;
  return r;
};

export function bedrockTarget(path: string): BedrockTarget | undefined {
  const m = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/.exec(path);
  if (!m) return undefined;
  return { path: '/v1/messages', model: decodeURIComponent(m[1]), stream: m[2] === 'invoke-with-response-stream' };
}

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/** The refusal of a request whose credentials Bedrock would refuse; undefined when it may go on. */
export async function checkBedrockAuth(opts: BedrockOptions, method: string, url: string, headers: IncomingHttpHeaders, body: string): Promise<Reply | undefined> {
  const auth = typeof headers.authorization === 'string' ? headers.authorization : '';
  if (auth.startsWith('Bearer ')) return opts.apiKey && auth.slice(7) === opts.apiKey ? undefined : awsError(403, 'AccessDeniedException', 'Invalid API Key format: Must start with pre-defined prefix');
  const m = AUTH.exec(auth);
  if (!m) return awsError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  const [, keyId, , region, service, signedHeaders, signature] = m;
  if (keyId !== opts.accessKeyId) return awsError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
  const amzDate = typeof headers['x-amz-date'] === 'string' ? headers['x-amz-date'] : '';
  const at = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!at) return awsError(403, 'InvalidSignatureException', 'Missing or malformed X-Amz-Date.');
  const signedAt = Date.UTC(+at[1], +at[2] - 1, +at[3], +at[4], +at[5], +at[6]);
  if (Math.abs(Date.now() - signedAt) > 5 * 60_000) return awsError(403, 'InvalidSignatureException', 'Signature expired: the request date is more than 5 minutes off the server time.');
  // The signature covers the payload's hash as the client declared it: the body must be the one it hashed.
  const declared = headers['x-amz-content-sha256'];
  if (typeof declared === 'string' && declared !== createHash('sha256').update(body).digest('hex')) {
    return awsError(403, 'InvalidSignatureException', 'The provided x-amz-content-sha256 header does not match what was computed.');
  }
  const u = new URL(url, 'http://placeholder');
  const kept: Record<string, string> = {};
  for (const name of signedHeaders.split(';')) {
    const v = headers[name];
    if (typeof v === 'string') kept[name] = v;
  }
  const signer = new SignatureV4({ service, region, credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey }, sha256: Hash.bind(null, 'sha256') });
  const again = await signer.sign(
    { method, protocol: 'http:', hostname: u.hostname, path: u.pathname, query: Object.fromEntries(u.searchParams), headers: kept, body },
    { signingDate: new Date(signedAt) },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(String(again.headers.authorization))?.[1];
  if (expected !== signature) {
    return awsError(403, 'InvalidSignatureException', 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.');
  }
  return undefined;
}

/** The Messages body Bedrock takes, made the body `/v1/messages` serves; a refusal if it is not Bedrock's. */
export function bedrockBody(target: BedrockTarget, body: unknown): Reply | undefined {
  const b = body as Record<string, unknown> | undefined;
  if (!b || typeof b !== 'object') return awsError(400, 'ValidationException', 'Malformed input request.');
  if (b.anthropic_version !== 'bedrock-2023-05-31') return awsError(400, 'ValidationException', 'Malformed input request: #: required key [anthropic_version] not found');
  if ('model' in b || 'stream' in b) return awsError(400, 'ValidationException', 'Malformed input request: #: extraneous key [model] is not permitted');
  delete b.anthropic_version;
  delete b.anthropic_beta;
  b.model = target.model;
  if (target.stream) b.stream = true;
  return undefined;
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** A Messages SSE reply as Bedrock streams it: one event-stream `chunk` message per event. */
export function asEventStream(reply: Reply): Reply {
  if (reply.status !== 200 || !String(reply.headers['content-type'] ?? '').startsWith('text/event-stream')) return reply;
  const frames: Buffer[] = [];
  for (const piece of reply.pieces) {
    for (const line of String(piece).split('\n')) {
      if (!line.startsWith('data: ')) continue;
      const payload = JSON.stringify({ bytes: Buffer.from(line.slice(6)).toString('base64') });
      frames.push(
        Buffer.from(
          codec.encode({
            headers: {
              ':event-type': { type: 'string', value: 'chunk' },
              ':content-type': { type: 'string', value: 'application/json' },
              ':message-type': { type: 'string', value: 'event' },
            },
            body: fromUtf8(payload),
          }),
        ),
      );
    }
  }
  return { ...reply, headers: { ...reply.headers, 'content-type': 'application/vnd.amazon.eventstream' }, pieces: frames };
}
