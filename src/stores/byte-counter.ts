import { Transform } from 'node:stream';

/** A pass-through that counts what went through it (`bytes` once the stream ended). */
export function byteCounter(): Transform & { bytes: number } {
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      counter.bytes += chunk.length;
      done(null, chunk);
    },
  }) as Transform & { bytes: number };
  counter.bytes = 0;
  return counter;
}
