import { upstreamSpan } from '../../tracing';
import type { ChannelConfig } from '../../gateway-config/schema';
import { UpstreamError } from '../../domain/ports/upstream-error';
import type { VideoAdapter, VideoInputReference } from '../../domain/ports/video';

/** An adapter as a channel type's module writes it: `fetchAsset` only where the file needs the channel's credentials. */
export type VideoAdapterParts = Omit<VideoAdapter, 'fetchAsset'> & Partial<Pick<VideoAdapter, 'fetchAsset'>>;
import { readAll, readErrorMember, sendUpstream, type UpstreamHttpResponse, withChannelHeaders } from '../http';

export type { VideoAdapter, VideoInputReference, VideoUpstreamStatus } from '../../domain/ports/video';

/**
 * The upstream side of a video task: one adapter per channel type (video-a, video-b, video-c), each speaking the
 * same contract as our own front door of that family, rooted at the channel's base_url, with
 * `Authorization: Bearer <key>`. Adapters hold no state: the workflow keeps the upstream id.
 */

/** Longest silence while fetching a finished file. */
export const ASSET_TIMEOUT_MS = 30_000;

/**
 * The finished file of a task: the adapter's own fetch, or a GET of the upstream's link (a signed URL that takes
 * no credentials, so the channel's key is never sent to wherever it points).
 */
export function withAssetFetch(parts: VideoAdapterParts): VideoAdapter {
  if (parts.fetchAsset) return parts as VideoAdapter;
  return {
    ...parts,
    fetchAsset: (_channel, assetUrl, signal, range) =>
      sendUpstream({ url: assetUrl, method: 'GET', headers: range ? { range } : {}, timeoutMs: ASSET_TIMEOUT_MS, signal }),
  };
}

/** The first frame as a data URL, for upstreams that take it inside their JSON body. */
export function inputDataUrl(input: VideoInputReference): string {
  return `data:${input.contentType};base64,${input.bytes.toString('base64')}`;
}

export function baseUrlOf(channel: ChannelConfig): string {
  return channel.base_url.replace(/\/+$/, '');
}

/** A JSON call to the channel: the parsed 2xx body, or UpstreamError (status, sanitised message and code). */
export async function videoJson(
  channel: ChannelConfig,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  signal: AbortSignal,
  opts: { body?: unknown; form?: FormData; headers?: Record<string, string> } = {},
): Promise<{ body: Record<string, unknown>; headers: UpstreamHttpResponse['headers'] }> {
  const own: Record<string, string> = { authorization: `Bearer ${channel.key}`, accept: 'application/json', ...opts.headers };
  let body: string | Buffer | undefined;
  if (opts.form !== undefined) {
    // The platform's own multipart encoder: a Request serialises the form and names its boundary.
    const encoded = new Request('http://form.invalid/', { method: 'POST', body: opts.form });
    own['content-type'] = encoded.headers.get('content-type')!;
    body = Buffer.from(await encoded.arrayBuffer());
  } else if (opts.body !== undefined) {
    own['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const headers = withChannelHeaders(own, channel);
  const attributes = { 'gateway.channel': channel.name, 'gateway.channel_type': channel.type, 'http.request.method': method, 'url.path': path.split('?')[0] };
  return upstreamSpan(`upstream ${method} ${channel.type}`, attributes, async () => {
    const res = await sendUpstream({ url: `${baseUrlOf(channel)}${path}`, method, headers, body, timeoutMs: channel.timeout_ms, signal });
    if (res.status < 200 || res.status >= 300) {
      const member = await readErrorMember(res).catch(() => undefined);
      const code = typeof member === 'object' && member && typeof (member as { code?: unknown }).code === 'string' ? (member as { code: string }).code : null;
      throw new UpstreamError('status', `the upstream answered ${res.status}`, res.status, code);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse((await readAll(res, 1024 * 1024)).toString('utf8'));
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      throw new UpstreamError('protocol', 'the upstream answer is not JSON');
    }
    if (!parsed || typeof parsed !== 'object') throw new UpstreamError('protocol', 'the upstream answer is not a JSON object');
    return { body: parsed as Record<string, unknown>, headers: res.headers };
  });
}

/** `Idempotency-Key` for a submit, when it has one. */
export const idempotencyHeader = (key: string | undefined): Record<string, string> => (key ? { 'idempotency-key': key } : {});

export function retryAfterOf(headers: UpstreamHttpResponse['headers']): number | undefined {
  const v = Number(headers['retry-after']);
  return Number.isFinite(v) && v > 0 ? v : undefined;
}

export function progressOf(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? Math.max(0, Math.min(100, Math.floor(v))) : 0;
}

export function stringOf(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

export function errorOf(v: unknown, fallbackCode = 'generation_failed'): { code: string; message: string } {
  const e = (v && typeof v === 'object' ? v : {}) as { code?: unknown; message?: unknown };
  return {
    code: typeof e.code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(e.code) ? e.code : fallbackCode,
    message: typeof e.message === 'string' ? e.message : 'The video generation failed upstream.',
  };
}
