import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { UpstreamError } from '../domain/ports/upstream-error';
import type { UpstreamHttpResponse } from '../domain/ports/upstream-http';
import type { CallSignal } from '../domain/ports/call-signal';
import { withFields } from '../with-fields';

export type { UpstreamHttpResponse } from '../domain/ports/upstream-http';

/**
 * The one way the gateway talks HTTP to upstreams: node:http(s) with keep-alive agents (no per-call
 * connection set-up on the hot path), the channel's `timeout_ms` as the longest silence allowed (waiting for
 * the answer, and between two chunks of its body), and a signal that tears the call down when the
 * client goes away. Failures become UpstreamError; their messages never name the upstream host or key.
 */
const agentOptions = { keepAlive: true, keepAliveMsecs: 1000, maxSockets: Infinity, maxFreeSockets: 256, scheduling: 'lifo' as const };
const httpAgent = new http.Agent(agentOptions);
const httpsAgent = new https.Agent(agentOptions);

export interface UpstreamHttpRequest {
  url: string;
  method: 'GET' | 'POST' | 'DELETE';
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Longest silence: no answer, or no body bytes, within this many ms fails the call with kind 'timeout'. */
  timeoutMs: number;
  signal: CallSignal;
}


/**
 * The gateway's headers for a channel's request with the channel's own `headers:` (GATEWAY_CONFIG) laid over them:
 * names compare case-insensitively, so an operator's `Authorization` replaces the gateway's, never doubles it.
 */
export function withChannelHeaders(own: Record<string, string>, channel: { headers?: Record<string, string> }): Record<string, string> {
  const extra = channel.headers;
  if (!extra || Object.keys(extra).length === 0) return own;
  const out: Record<string, string> = {};
  const overridden = new Set(Object.keys(extra).map((k) => k.toLowerCase()));
  for (const [k, v] of Object.entries(own)) if (!overridden.has(k.toLowerCase())) out[k] = v;
  for (const [k, v] of Object.entries(extra)) out[k.toLowerCase()] = v;
  return out;
}

/** Sends the request; resolves when the status line and headers arrived. */
export function sendUpstream(req: UpstreamHttpRequest): Promise<UpstreamHttpResponse> {
  return new Promise((resolve, reject) => {
    if (req.signal.aborted) {
      reject(new UpstreamError('aborted', 'the client went away'));
      return;
    }
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      reject(new UpstreamError('connect', 'the channel has an invalid base URL'));
      return;
    }
    const isHttps = url.protocol === 'https:';
    const headers: Record<string, string | number> = withFields(req.headers, {});
    if (req.body !== undefined) headers['content-length'] = Buffer.byteLength(req.body);
    let timedOut = false;
    let responded = false;
    const outgoing = (isHttps ? https : http).request({
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port || (isHttps ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: req.method,
      headers,
      agent: isHttps ? httpsAgent : httpAgent,
    });
    const onAbort = () => outgoing.destroy(new UpstreamError('aborted', 'the client went away'));
    req.signal.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => req.signal.removeEventListener('abort', onAbort);
    outgoing.setTimeout(req.timeoutMs, () => {
      timedOut = true;
      outgoing.destroy(new UpstreamError('timeout', 'the upstream did not answer in time'));
    });
    outgoing.setNoDelay(true);
    const classify = (err: unknown): UpstreamError => {
      if (err instanceof UpstreamError) return err;
      if (req.signal.aborted) return new UpstreamError('aborted', 'the client went away');
      if (timedOut) return new UpstreamError('timeout', 'the upstream did not answer in time');
      return responded
        ? new UpstreamError('protocol', 'the upstream connection was closed before the answer was complete')
        : new UpstreamError('connect', 'the upstream could not be reached');
    };
    outgoing.on('error', (err) => {
      cleanup();
      if (!responded) reject(classify(err));
    });
    outgoing.on('response', (res: IncomingMessage) => {
      responded = true;
      res.on('end', cleanup);
      res.on('close', cleanup);
      const destroy = () => {
        cleanup();
        res.destroy();
        outgoing.destroy();
      };
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: readChunks(res, classify),
        readAll: (maxBytes) => readWhole(res, classify, maxBytes, destroy),
        destroy,
      });
    });
    outgoing.end(req.body);
  });
}

async function* readChunks(res: IncomingMessage, classify: (err: unknown) => UpstreamError): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of res) yield chunk as Buffer;
  } catch (err) {
    throw classify(err);
  }
  // 'aborted': the socket closed before the body was complete (Node ends the stream without an error then).
  if (!res.complete) throw classify(new Error('incomplete body'));
}

/** The whole body from the message's events (UpstreamHttpResponse.readAll); errors as readChunks gives them. */
function readWhole(res: IncomingMessage, classify: (err: unknown) => UpstreamError, maxBytes: number, destroy: () => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (err: UpstreamError | null) => {
      if (settled) return;
      settled = true;
      res.off('data', onData);
      res.off('end', onEnd);
      res.off('close', onClose);
      // onError stays: an 'error' after the answer was settled (a destroyed message) must not go unhandled.
      if (err) reject(err);
      else resolve(parts.length === 1 ? parts[0] : Buffer.concat(parts, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        destroy();
        finish(new UpstreamError('protocol', 'the upstream answer is too large'));
      } else {
        parts.push(chunk);
      }
    };
    // 'aborted': the socket closed before the body was complete (Node ends the message without an error then).
    const onEnd = () => finish(res.complete ? null : classify(new Error('incomplete body')));
    const onError = (err: unknown) => finish(classify(err));
    // Closed without an end: cut short (after 'end', finish has already run).
    const onClose = () => finish(classify(new Error('incomplete body')));
    res.on('data', onData);
    res.on('end', onEnd);
    res.on('error', onError);
    res.on('close', onClose);
  });
}

/** The whole body, at most `maxBytes` (then a protocol error). */
export function readAll(res: UpstreamHttpResponse, maxBytes = 64 * 1024 * 1024): Promise<Buffer> {
  return res.readAll(maxBytes);
}

/** The `error` member of a non-2xx JSON answer (at most 64 KiB read), or undefined when it has none. */
/** A 2xx answer's body as a JSON object; anything else is a protocol error. */
export async function readJsonObject(res: UpstreamHttpResponse): Promise<Record<string, unknown>> {
  const buf = await readAll(res);
  try {
    const v: unknown = JSON.parse(buf.toString('utf8'));
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // the same refusal below
  }
  throw new UpstreamError('protocol', 'the upstream answer is not valid JSON');
}

export async function readErrorMember(res: UpstreamHttpResponse): Promise<unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse((await readAll(res, 64 * 1024)).toString('utf8'));
  } catch {
    return undefined;
  }
  return parsed && typeof parsed === 'object' ? (parsed as { error?: unknown }).error : undefined;
}

/** What no error message may show of a channel: its key, its base URL and its host (sanitizeUpstreamMessage hides them). */
export function channelSecrets(call: { channel: { key: string; base_url: string } }): string[] {
  let host = '';
  try {
    host = new URL(call.channel.base_url).host;
  } catch {
    // no host to hide
  }
  return [call.channel.key, call.channel.base_url, host];
}
