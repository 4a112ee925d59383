import { Readable } from 'node:stream';
import parseRange from 'range-parser';
import type { ConfigStore } from '../../gateway-config/store';
import { UpstreamError } from '../ports/upstream-error';
import type { VideoAdapterLookup } from '../ports/video';
import { NotFoundError } from '../errors';
import { UpstreamUnavailableError } from '../relay/errors';
import type { VideoTaskRepository } from '../ports/video-tasks';
import type { ObjectStore } from '../ports/object-store';

/** A finished video as a link serves it: status, the headers that describe the bytes, and the bytes. */
export interface VideoFile {
  status: 200 | 206 | 416;
  headers: Record<string, string>;
  body: Readable | null;
}

/** Headers of the upstream's file answer that reach the client (never its host, cookies or server details). */
const PASSED = ['content-type', 'content-length', 'content-range', 'accept-ranges', 'last-modified', 'etag'];

/**
 * The file of a completed task: our stored copy, with single Range requests answered from it (206, or 416 outside
 * the file; several ranges get the whole file); before a copy exists, or when the copy gave up, the upstream's
 * file streamed through. A copy that retention deleted is gone (404), whatever the upstream still has.
 */
export async function openVideoFile(
  deps: { tasks: Pick<VideoTaskRepository, 'resultSource'>; store: ObjectStore; config: ConfigStore; adapters: VideoAdapterLookup },
  taskId: string,
  range: string | undefined,
  signal: AbortSignal,
): Promise<VideoFile> {
  const source = await deps.tasks.resultSource(taskId);
  if (!source || source.status !== 'completed' || source.deleted) throw new NotFoundError('The video of this link is no longer available.');
  if (source.stored) {
    const { bytes, contentType, key } = source.stored;
    const headers: Record<string, string> = { 'content-type': contentType, 'accept-ranges': 'bytes' };
    const ranges = range ? parseRange(bytes, range, { combine: true }) : -2;
    const one = Array.isArray(ranges) && ranges.type === 'bytes' && ranges.length === 1 ? ranges[0] : null;
    if (ranges === -1 || (one && bytes === 0)) return { status: 416, headers: { ...headers, 'content-range': `bytes */${bytes}` }, body: null };
    const body = await deps.store.get(key, one ?? undefined);
    if (!body) throw new NotFoundError('The video of this link is no longer available.');
    if (one) return { status: 206, headers: { ...headers, 'content-length': String(one.end - one.start + 1), 'content-range': `bytes ${one.start}-${one.end}/${bytes}` }, body };
    return { status: 200, headers: { ...headers, 'content-length': String(bytes) }, body };
  }

  const channel = deps.config.current().channels.find((c) => c.name === source.channel);
  const adapter = channel && deps.adapters(channel.type);
  if (!source.assetUrl || !channel || !adapter) throw new NotFoundError('The video of this link is no longer available.');
  let upstream;
  try {
    upstream = await adapter.fetchAsset(channel, source.assetUrl, signal, range);
  } catch (err) {
    if (err instanceof UpstreamError) throw new UpstreamUnavailableError(err.kind === 'timeout' ? 'timeout' : 'failed');
    throw err;
  }
  if (upstream.status !== 200 && upstream.status !== 206 && upstream.status !== 416) {
    upstream.destroy();
    if (upstream.status === 404 || upstream.status === 410) throw new NotFoundError('The video of this link is no longer available.');
    throw new UpstreamUnavailableError('failed');
  }
  const headers: Record<string, string> = {};
  for (const name of PASSED) {
    const v = upstream.headers[name];
    if (typeof v === 'string') headers[name] = v;
  }
  return { status: upstream.status, headers, body: Readable.from(upstream.body) };
}
