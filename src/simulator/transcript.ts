import { Prng } from './hash';

/**
 * What the simulator "hears" in an upload: a duration and a deterministic transcript derived from the file's
 * bytes (so the same file always gives the same words), with word and segment timings.
 */

/** Bytes per second assumed for anything that is not a WAV file (16 kB/s, about a 128 kbit/s compressed stream). */
export const NON_WAV_BYTES_PER_SECOND = 16000;
/** Words per second of audio, about the pace of speech. */
const WORDS_PER_SECOND = 2.5;
const MIN_WORDS = 3;
const WORDS_PER_SENTENCE = 10;
/** Segments (SRT/VTT cues, verbose_json segments) cover about this many seconds. */
const SEGMENT_SECONDS = 5;

const WORDS = [
  'the', 'river', 'morning', 'light', 'quiet', 'garden', 'across', 'window', 'simple', 'market', 'little', 'station',
  'yellow', 'bridge', 'under', 'music', 'always', 'summer', 'people', 'city', 'paper', 'table', 'open', 'forest',
  'travel', 'coffee', 'winter', 'silver', 'ocean', 'road', 'green', 'story', 'early', 'house', 'voice', 'small',
  'between', 'water', 'evening', 'mountain', 'letter', 'friend', 'clear', 'north', 'lantern', 'train', 'bright', 'stone',
  'follow', 'together', 'careful', 'distant', 'harbor', 'kitchen', 'planet', 'signal', 'gentle', 'autumn', 'record', 'island',
  'slowly', 'minute', 'number', 'before',
];

/**
 * Seconds of audio: a RIFF/WAVE file's data chunk size / byte rate (clipped to the bytes present, for WAVs
 * written by streamers that leave the size unset), else `bytes / 16000`.
 */
export function audioSeconds(file: Buffer): number {
  return wavSeconds(file) ?? file.length / NON_WAV_BYTES_PER_SECOND;
}

function wavSeconds(b: Buffer): number | undefined {
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WAVE') return undefined;
  let byteRate: number | undefined;
  for (let off = 12; off + 8 <= b.length; ) {
    const id = b.toString('latin1', off, off + 4);
    const size = b.readUInt32LE(off + 4);
    if (id === 'fmt ' && off + 20 <= b.length) byteRate = b.readUInt32LE(off + 16);
    if (id === 'data') {
      if (!byteRate) return undefined;
      return Math.min(size, b.length - off - 8) / byteRate;
    }
    off += 8 + size + (size & 1);
  }
  return undefined;
}

export interface TimedWord {
  /** As it appears in the text (capitalised, with punctuation). */
  text: string;
  /** Bare, as in verbose_json `words`. */
  word: string;
  start: number;
  end: number;
}

export interface Segment {
  id: number;
  start: number;
  end: number;
  text: string;
}

export interface Transcript {
  text: string;
  words: TimedWord[];
  segments: Segment[];
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** `max(3, round(2.5 × seconds))` words picked from a fixed list by a generator seeded with `seed`, evenly timed. */
export function transcribe(seed: Buffer, seconds: number): Transcript {
  const n = Math.max(MIN_WORDS, Math.round(seconds * WORDS_PER_SECOND));
  const prng = new Prng(seed);
  const words: TimedWord[] = [];
  for (let i = 0; i < n; i++) {
    const word = WORDS[prng.next() % WORDS.length];
    const first = i % WORDS_PER_SENTENCE === 0;
    const last = i === n - 1 || i % WORDS_PER_SENTENCE === WORDS_PER_SENTENCE - 1;
    const text = (first ? word[0].toUpperCase() + word.slice(1) : word) + (last ? '.' : '');
    words.push({ text, word, start: round2((seconds * i) / n), end: round2((seconds * (i + 1)) / n) });
  }
  const segments: Segment[] = [];
  for (const w of words) {
    const k = Math.floor(w.start / SEGMENT_SECONDS);
    const seg = segments[segments.length - 1];
    if (seg && Math.floor(seg.start / SEGMENT_SECONDS) === k) {
      seg.text += ` ${w.text}`;
      seg.end = w.end;
    } else {
      segments.push({ id: segments.length, start: w.start, end: w.end, text: w.text });
    }
  }
  return { text: words.map((w) => w.text).join(' '), words, segments };
}

function clock(seconds: number, sep: ',' | '.'): string {
  const ms = Math.round(seconds * 1000);
  const pad = (v: number, w = 2) => String(v).padStart(w, '0');
  return `${pad(Math.floor(ms / 3600000))}:${pad(Math.floor(ms / 60000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${sep}${pad(ms % 1000, 3)}`;
}

export function srt(segments: Segment[]): string {
  return segments.map((s, i) => `${i + 1}\n${clock(s.start, ',')} --> ${clock(s.end, ',')}\n${s.text}\n\n`).join('');
}

export function vtt(segments: Segment[]): string {
  return `WEBVTT\n\n${segments.map((s) => `${clock(s.start, '.')} --> ${clock(s.end, '.')}\n${s.text}\n\n`).join('')}`;
}
