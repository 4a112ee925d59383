import { createHash } from 'node:crypto';

/**
 * Deterministic seeds for the simulator's made-up outputs: the same request must give the same bytes, so ids,
 * audio and transcripts derive from a digest of what was asked instead of from a clock or a random source.
 */

/** SHA-256 of the parts; each is length-prefixed so ['ab', 'c'] and ['a', 'bc'] differ. */
export function digest(...parts: Array<string | Buffer>): Buffer {
  const h = createHash('sha256');
  for (const p of parts) {
    const b = typeof p === 'string' ? Buffer.from(p, 'utf8') : p;
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length >>> 0);
    h.update(len).update(b);
  }
  return h.digest();
}

/** A uuid (version-4 layout) made from a digest. */
export function uuidFrom(d: Buffer): string {
  const b = Buffer.from(d.subarray(0, 16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** xorshift32 seeded from a digest: fast filler bytes (audio can be ~1 MB). */
export class Prng {
  private s: number;

  constructor(seed: Buffer) {
    this.s = seed.readUInt32BE(0) || 1;
  }

  /** The next unsigned 32-bit value. */
  next(): number {
    let s = this.s;
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    this.s = s >>> 0;
    return this.s;
  }

  /** Fills `buf[from..to)` with pseudo-random bytes. */
  fill(buf: Buffer, from = 0, to = buf.length): void {
    for (let i = from; i < to; i++) buf[i] = this.next() & 0xff;
  }
}

/** Characters of a string as people count them (code points, so an emoji is one). */
export function charCount(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) n++; // a low surrogate finishes a code point already counted
  }
  return n;
}

/** `buf` in `parts` slices of about equal size (fewer when it is shorter), concatenating back to `buf`. */
export function splitBytes(buf: Buffer, parts: number): Buffer[] {
  const n = Math.max(1, Math.min(parts, buf.length));
  const out: Buffer[] = [];
  for (let i = 0; i < n; i++) out.push(buf.subarray(Math.floor((buf.length * i) / n), Math.floor((buf.length * (i + 1)) / n)));
  return out;
}
