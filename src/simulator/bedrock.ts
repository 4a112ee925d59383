import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { json } from './reply';
import { converseResponse, converseStreamEvents, converseToMessages } from './bedrock-converse';
import type { Reply } from './types';

/**
 * AWS Bedrock's runtime, as the simulator speaks it, checking what Bedrock checks:
 *
 * - `POST /model/{modelId}/invoke` and `/invoke-with-response-stream` serve `/v1/messages` for the model, taking the
 *   Messages body as Bedrock takes it: `anthropic_version: bedrock-2023-05-31`, no `model`. The streamed answer is an
 *   AWS event stream (`application/vnd.amazon.eventstream`) of `chunk` events, each carrying one Messages event in
 *   `bytes`, encoded by the SDK's own codec.
 * - A streamed request whose text says `sim:stream_exception` is cut halfway by a `modelStreamErrorException`.
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
  /** InvokeModel with the Messages body, Converse, or InvokeModel with a Titan or Cohere embedding body. */
  kind: 'messages' | 'converse' | 'titan' | 'cohere';
  /** A Converse request with a cachePoint (set when its body is read). */
  cached?: boolean;
  /** The texts of an embedding request (set when its body is read). */
  texts?: number;
  /** A streamed request whose text says `sim:stream_exception`: its stream ends in a `modelStreamErrorException`. */
  exception?: boolean;
}

const awsError = (status: number, type: string, message: string): Reply => {
  const r = json(status, { message });
  r.headers['x-amzn-errortype'] = `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`;
  return r;
};

export function bedrockTarget(path: string): BedrockTarget | undefined {
  const m = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream|converse|converse-stream)$/.exec(path);
  if (!m) return undefined;
  const model = decodeURIComponent(m[1]);
  const stream = m[2].endsWith('-stream');
  if (m[2].startsWith('converse')) return { path: '/v1/messages', model, stream, kind: 'converse' };
  if (/titan-embed/i.test(model)) return { path: '/v1/embeddings', model, stream, kind: 'titan' };
  if (/cohere\.embed/i.test(model)) return { path: '/v1/embeddings', model, stream, kind: 'cohere' };
  return { path: '/v1/messages', model, stream, kind: 'messages' };
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

/** Replaces the body's members with another's (the handlers read the body the server parsed). */
function become(b: Record<string, unknown>, next: Record<string, unknown>): undefined {
  for (const k of Object.keys(b)) delete b[k];
  Object.assign(b, next);
  return undefined;
}

/**
 * The body Bedrock takes for the target, made the body the simulator's own route serves (`/v1/messages`,
 * `/v1/embeddings`); a refusal if it is not Bedrock's.
 */
export function bedrockBody(target: BedrockTarget, body: unknown): Reply | undefined {
  const b = body as Record<string, unknown> | undefined;
  if (!b || typeof b !== 'object' || Array.isArray(b)) return awsError(400, 'ValidationException', 'Malformed input request.');
  target.exception = target.stream && JSON.stringify(b).includes('sim:stream_exception');
  if (target.kind === 'converse') {
    const asMessages = converseToMessages(target.model, b, target.stream);
    if (typeof asMessages === 'string') return awsError(400, 'ValidationException', asMessages);
    target.cached = asMessages.cached;
    return become(b, asMessages.body);
  }
  if (target.kind === 'titan') {
    if (typeof b.inputText !== 'string' || !b.inputText) return awsError(400, 'ValidationException', 'Malformed input request: #: required key [inputText] not found');
    if (b.dimensions !== undefined && ![256, 512, 1024].includes(b.dimensions as number)) return awsError(400, 'ValidationException', 'Malformed input request: #/dimensions: must be 256, 512 or 1024');
    target.texts = 1;
    return become(b, { model: target.model, input: b.inputText, dimensions: b.dimensions ?? 1024 });
  }
  if (target.kind === 'cohere') {
    if (!Array.isArray(b.texts) || b.texts.length === 0 || b.texts.length > 96 || !b.texts.every((t) => typeof t === 'string' && t)) {
      return awsError(400, 'ValidationException', 'Malformed input request: #/texts: expected 1 to 96 non-empty strings');
    }
    if (typeof b.input_type !== 'string') return awsError(400, 'ValidationException', 'Malformed input request: #: required key [input_type] not found');
    target.texts = b.texts.length;
    return become(b, { model: target.model, input: b.texts, ...(b.output_dimension !== undefined ? { dimensions: b.output_dimension } : {}) });
  }
  if (b.anthropic_version !== 'bedrock-2023-05-31') return awsError(400, 'ValidationException', 'Malformed input request: #: required key [anthropic_version] not found');
  if ('model' in b || 'stream' in b) return awsError(400, 'ValidationException', 'Malformed input request: #: extraneous key [model] is not permitted');
  delete b.anthropic_version;
  delete b.anthropic_beta;
  b.model = target.model;
  if (target.stream) b.stream = true;
  return undefined;
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** One message of an AWS event stream: an `event` named by its `:event-type`, or an `exception` by its `:exception-type`. */
function streamMessage(kind: 'event' | 'exception', type: string, payload: unknown): Buffer {
  return Buffer.from(
    codec.encode({
      headers: {
        [kind === 'event' ? ':event-type' : ':exception-type']: { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
        ':message-type': { type: 'string', value: kind },
      },
      body: fromUtf8(JSON.stringify(payload)),
    }),
  );
}

const frame = (type: string, payload: unknown): Buffer => streamMessage('event', type, payload);

const ERROR_TYPES: Record<number, string> = { 400: 'ValidationException', 403: 'AccessDeniedException', 404: 'ResourceNotFoundException', 429: 'ThrottlingException', 503: 'ServiceUnavailableException' };

/** A stream's frames, cut halfway by an exception when the request asked for one. */
function streamed(target: BedrockTarget, reply: Reply, frames: Buffer[]): Reply {
  const pieces = target.exception ? [...frames.slice(0, Math.ceil(frames.length / 2)), streamMessage('exception', 'modelStreamErrorException', { message: 'The model stream was interrupted.' })] : frames;
  return { ...reply, headers: { ...reply.headers, 'content-type': 'application/vnd.amazon.eventstream' }, pieces };
}

/** The events of an SSE reply's `data:` lines. */
function sseEvents(reply: Reply): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const piece of reply.pieces) for (const line of String(piece).split('\n')) if (line.startsWith('data: ')) out.push(JSON.parse(line.slice(6)) as Record<string, unknown>);
  return out;
}

/**
 * The simulator route's reply as Bedrock answers the target: an error as Bedrock's (`{message}`, its type in
 * `x-amzn-errortype`); a Messages stream as `chunk` events carrying each event in `bytes`; a Converse answer in its
 * JSON or event-stream shape; embeddings in Titan's or Cohere's shape, with the counted tokens in
 * `X-Amzn-Bedrock-Input-Token-Count`.
 */
export function bedrockReply(target: BedrockTarget, reply: Reply): Reply {
  if (reply.status !== 200) {
    let message = 'The request could not be served.';
    try {
      const body = JSON.parse(String(reply.pieces.join(''))) as { message?: string; error?: { message?: string } };
      message = body.error?.message ?? body.message ?? message;
    } catch {
      // keep the generic message
    }
    if (reply.headers['x-amzn-errortype']) return reply;
    return awsError(reply.status, ERROR_TYPES[reply.status] ?? (reply.status >= 500 ? 'InternalServerException' : 'ValidationException'), message);
  }
  if (target.kind === 'titan' || target.kind === 'cohere') {
    const body = JSON.parse(String(reply.pieces.join(''))) as { data: Array<{ embedding: number[] }>; usage: { prompt_tokens: number } };
    const tokens = String(body.usage.prompt_tokens);
    const answer =
      target.kind === 'titan'
        ? json(200, { embedding: body.data[0].embedding, embeddingsByType: { float: body.data[0].embedding }, inputTextTokenCount: body.usage.prompt_tokens })
        : json(200, { id: 'emb-sim', embeddings: body.data.map((d) => d.embedding), response_type: 'embeddings_floats', texts: [] });
    answer.headers['x-amzn-bedrock-input-token-count'] = tokens;
    return answer;
  }
  if (target.kind === 'converse') {
    if (!target.stream) return json(200, converseResponse(JSON.parse(String(reply.pieces.join(''))) as Record<string, unknown>, target.cached === true));
    return streamed(target, reply, converseStreamEvents(sseEvents(reply), target.cached === true).map((e) => frame(e.type, e.payload)));
  }
  if (!target.stream) return reply;
  return streamed(target, reply, sseEvents(reply).map((event) => frame('chunk', { bytes: Buffer.from(JSON.stringify(event)).toString('base64') })));
}
