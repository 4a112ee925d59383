import type { ByteChunk, ByteStream } from '../../ports/audio';
import type { TokenUsage } from '../../pricing/usage';
import type { ByteSink } from '../caller';
import type { Metered, StreamWire } from '../engine';

/**
 * The client side of a byte stream (audio, or SSE events relayed whole): each chunk goes out as it arrives, except
 * the last, held back until the call is billed, so a client that has the whole answer has been billed for it (a
 * chat stream holds back its `[DONE]` for the same reason). An error after the first byte ends the response early:
 * the client sees a cut body, as from any upstream that fails mid-stream.
 */
export function byteWire(sink: ByteSink, stream: ByteStream, metered: (reported: TokenUsage | undefined) => Metered): StreamWire<ByteChunk> {
  sink.contentType(stream.contentType);
  let pending: Buffer | null = null;
  let usage: TokenUsage | undefined;
  return {
    forward(ev) {
      if (ev.usage) usage = ev.usage;
      const out = pending;
      pending = ev.data;
      return out ? sink.write(out) : true;
    },
    metered: () => metered(usage),
    complete() {
      if (pending) void sink.write(pending);
      pending = null;
    },
    error: () => undefined,
  };
}
