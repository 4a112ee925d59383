import type { ByteChunk, ByteStream } from '../domain/ports/audio';
import type { UpstreamHttpResponse } from './http';
import { parseSse, type SseEvent } from './sse';

/**
 * An upstream body read as items (`items` parses it) that can be cancelled: the connection is dropped on cancel, or
 * when the reader stops early, and kept for nothing once the body was read to its end.
 */
export function cancellableBody<T>(res: UpstreamHttpResponse, items: (body: AsyncIterable<Buffer>) => AsyncIterable<T>): AsyncIterable<T> & { cancel(): void } {
  let cancelled = false;
  async function* read(): AsyncGenerator<T> {
    try {
      yield* items(res.body);
    } finally {
      if (!cancelled) res.destroy();
    }
  }
  const it = read();
  return {
    [Symbol.asyncIterator]: () => it,
    cancel() {
      if (cancelled) return;
      cancelled = true;
      res.destroy();
      void it.return(undefined).catch(() => undefined);
    },
  };
}

/** An upstream body as a ByteStream, with its Content-Type. */
export function byteStream(res: UpstreamHttpResponse, chunks: (body: AsyncIterable<Buffer>) => AsyncIterable<ByteChunk>): ByteStream {
  return { ...cancellableBody(res, chunks), contentType: String(res.headers['content-type'] ?? 'application/octet-stream') };
}

/** The bytes as they came. */
export async function* rawChunks(body: AsyncIterable<Buffer>): AsyncGenerator<ByteChunk> {
  for await (const data of body) yield { data };
}

/** SSE events, each written back whole (`event:` and `data:` lines), with the usage `usageOf` finds in it. */
export function sseChunks(usageOf: (ev: SseEvent) => ByteChunk['usage']) {
  return async function* (body: AsyncIterable<Buffer>): AsyncGenerator<ByteChunk> {
    for await (const ev of parseSse(body)) {
      const text = `${ev.event !== undefined ? `event: ${ev.event}\n` : ''}data: ${ev.data}\n\n`;
      const usage = usageOf(ev);
      yield usage ? { data: Buffer.from(text), usage } : { data: Buffer.from(text) };
    }
  };
}

/** The JSON of an SSE event's data, or undefined. */
export function eventJson(ev: SseEvent): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(ev.data);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
