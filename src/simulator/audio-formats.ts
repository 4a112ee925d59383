import { Prng } from './hash';

/**
 * Fake audio files for the speech endpoint. They are not decodable speech, but each starts the way a real file
 * of its format does (so content sniffers, players' probes and our own checks recognise it), and WAV carries a
 * correct header from which the duration reads. Everything is 24 kHz mono, as OpenAI's speech output is.
 */

export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

export const SPEECH_CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

export const SAMPLE_RATE = 24000;
/** 16-bit mono PCM: bytes per second of audio. */
export const PCM_BYTE_RATE = SAMPLE_RATE * 2;
export const WAV_HEADER_BYTES = 44;

/**
 * Exactly `length` bytes (even, >= 1024) of `format`. The filler comes from `seed`; WAV and PCM samples are a
 * quiet tone per character of `text` (plus a little noise), so the file is at least harmless to play.
 */
export function fakeAudio(format: SpeechFormat, length: number, seed: Buffer, text: string): Buffer {
  const out = Buffer.alloc(length);
  const prng = new Prng(seed);
  switch (format) {
    case 'wav':
      wavHeader(length - WAV_HEADER_BYTES).copy(out, 0);
      tones(out, WAV_HEADER_BYTES, text, prng);
      break;
    case 'pcm':
      tones(out, 0, text, prng);
      break;
    case 'mp3':
      mp3(out, prng);
      break;
    case 'aac':
      adts(out, prng);
      break;
    case 'flac':
      flac(out, prng);
      break;
    case 'opus':
      oggOpus(out, prng);
      break;
  }
  return out;
}

/** RIFF/WAVE, PCM, 24 kHz, mono, 16-bit, followed by `dataBytes` of samples. */
export function wavHeader(dataBytes: number): Buffer {
  const h = Buffer.alloc(WAV_HEADER_BYTES);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVEfmt ', 8, 'latin1');
  h.writeUInt32LE(16, 16); // fmt chunk size
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(SAMPLE_RATE, 24);
  h.writeUInt32LE(PCM_BYTE_RATE, 28);
  h.writeUInt16LE(2, 32); // block align
  h.writeUInt16LE(16, 34); // bits per sample
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

/** Samples per input character: 200 bytes of 16-bit PCM, matching the speech endpoint's length rule. */
const SAMPLES_PER_CHAR = 100;

function tones(out: Buffer, from: number, text: string, prng: Prng): void {
  const chars = Array.from(text || ' ');
  for (let off = from, i = 0; off + 1 < out.length; off += 2, i++) {
    const code = chars[Math.floor(i / SAMPLES_PER_CHAR) % chars.length].codePointAt(0) ?? 32;
    const freq = 180 + (code % 40) * 15;
    const noise = (prng.next() & 0xff) - 128;
    out.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * freq * i) / SAMPLE_RATE)) + noise, off);
  }
}

/** An empty ID3v2.4 tag, then MPEG-2 Layer III frames (24 kHz, 64 kbit/s, mono: 192 bytes each). */
function mp3(out: Buffer, prng: Prng): void {
  out.write('ID3', 0, 'latin1');
  out[3] = 4; // version 2.4.0, no flags, tag size 0
  prng.fill(out, 10);
  for (let off = 10; off + 4 <= out.length; off += 192) {
    out[off] = 0xff;
    out[off + 1] = 0xf3; // sync, MPEG-2, Layer III, no CRC
    out[off + 2] = 0x84; // 64 kbit/s, 24 kHz, no padding
    out[off + 3] = 0xc0; // mono
  }
}

/** ADTS frames (AAC LC, 24 kHz, mono) of 256 bytes; the last one takes the remainder. */
function adts(out: Buffer, prng: Prng): void {
  prng.fill(out);
  const FRAME = 256;
  for (let off = 0; off < out.length; off += FRAME) {
    const len = out.length - off < 2 * FRAME ? out.length - off : FRAME;
    out[off] = 0xff;
    out[off + 1] = 0xf1; // sync, MPEG-4, no CRC
    out[off + 2] = 0x58; // AAC LC, sampling index 6 (24 kHz), channel config high bit 0
    out[off + 3] = 0x40 | ((len >> 11) & 0x03); // channel config 1
    out[off + 4] = (len >> 3) & 0xff;
    out[off + 5] = ((len & 0x07) << 5) | 0x1f; // buffer fullness 0x7FF (VBR)
    out[off + 6] = 0xfc; // one raw data block
    if (len !== FRAME) break;
  }
}

/** `fLaC`, a STREAMINFO block (24 kHz, mono, 16-bit), then a frame sync code. */
function flac(out: Buffer, prng: Prng): void {
  prng.fill(out);
  out.write('fLaC', 0, 'latin1');
  out[4] = 0x80; // last metadata block, type STREAMINFO
  out.writeUIntBE(34, 5, 3);
  out.writeUInt16BE(4096, 8); // min block size
  out.writeUInt16BE(4096, 10); // max block size
  out.writeUIntBE(0, 12, 3); // min frame size unknown
  out.writeUIntBE(0, 15, 3); // max frame size unknown
  const samples = BigInt(Math.floor(out.length / 2));
  out.writeBigUInt64BE((BigInt(SAMPLE_RATE) << 44n) | (0n << 41n) | (15n << 36n) | samples, 18);
  out.fill(0, 26, 42); // MD5 unknown
  out[42] = 0xff;
  out[43] = 0xf8; // frame sync, fixed block size
}

/** An Ogg page (beginning of stream) holding an OpusHead packet, with its CRC. */
function oggOpus(out: Buffer, prng: Prng): void {
  prng.fill(out);
  const page = Buffer.alloc(27 + 1 + 19);
  page.write('OggS', 0, 'latin1');
  page[4] = 0; // version
  page[5] = 0x02; // beginning of stream
  page.writeBigUInt64LE(0n, 6); // granule position
  page.writeUInt32LE(0x53494d55, 14); // stream serial
  page.writeUInt32LE(0, 18); // page sequence
  page.writeUInt32LE(0, 22); // CRC, set below
  page[26] = 1; // one segment
  page[27] = 19; // of 19 bytes
  page.write('OpusHead', 28, 'latin1');
  page[36] = 1; // version
  page[37] = 1; // mono
  page.writeUInt16LE(312, 38); // pre-skip
  page.writeUInt32LE(SAMPLE_RATE, 40);
  page.writeInt16LE(0, 44); // output gain
  page[46] = 0; // channel mapping family
  page.writeUInt32LE(oggCrc(page), 22);
  page.copy(out, 0);
}

let CRC_TABLE: Uint32Array | undefined;

/** Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, initial value 0. */
function oggCrc(data: Buffer): number {
  if (!CRC_TABLE) {
    CRC_TABLE = new Uint32Array(256);
    for (let i = 0; i < 256; i++) {
      let r = i << 24;
      for (let k = 0; k < 8; k++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
      CRC_TABLE[i] = r >>> 0;
    }
  }
  let crc = 0;
  for (const b of data) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ b) & 0xff]) >>> 0;
  return crc;
}
