import type { AudioAdapter, ByteChunk, ByteStream, TranscriptionRequest, TranscriptionResult } from '../../ports/audio';
import { hasTokenPrices, quantityUnitOf } from '../../pricing/cost';
import { NO_TOKENS, type TokenUsage } from '../../pricing/usage';
import type { ModelRoute } from '../resolve';
import type { ByteSink } from '../caller';
import type { Metered, StreamEndpoint, UnaryEndpoint } from '../engine';
import { estimateTokens } from '../metering';
import { byteWire } from './byte-wire';

/**
 * How long an upload whose header says nothing is taken to last. The hold assumes the lowest bitrate speech is sent
 * at (16 kbit/s: the longest such a file can plausibly play); the bill, when neither the upstream nor the header
 * gave a duration, assumes a common one (128 kbit/s MP3).
 */
export const HOLD_BYTES_PER_SECOND = 2_000;
export const BILL_BYTES_PER_SECOND = 16_000;
/** A header's duration is held with this margin, in case the upstream measures it longer. */
const HEADER_MARGIN = 1.05;
/** Audio tokens per second of audio, held for a token-priced model and billed when its upstream reports none. */
export const AUDIO_TOKENS_PER_SECOND = 10;
/** Output tokens held per second of audio (speech runs about 3 words a second) beside a fixed allowance. */
const OUTPUT_TOKENS_PER_SECOND = 8;
const OUTPUT_TOKENS_BASE = 256;

/** The form's `prompt` text ('' without one): input tokens of a token-priced model. */
const promptOf = (req: TranscriptionRequest): string => req.fields.find(([k]) => k === 'prompt')?.[1] ?? '';

function heldMs(req: TranscriptionRequest): number {
  if (req.durationMs !== undefined) return Math.ceil(req.durationMs * HEADER_MARGIN) + 1000;
  return Math.ceil((req.file.data.length / HOLD_BYTES_PER_SECOND) * 1000);
}

/** Milliseconds to bill: the upstream's duration, else the file header's, else the file's size at a common bitrate. */
function billedMs(req: TranscriptionRequest, seconds: number | null): number {
  if (seconds !== null) return Math.ceil(seconds * 1000);
  if (req.durationMs !== undefined) return Math.ceil(req.durationMs);
  return Math.ceil((req.file.data.length / BILL_BYTES_PER_SECOND) * 1000);
}

/** What a transcription used: the upstream's tokens, else minutes of audio, else tokens counted locally. */
function transcriptionMetered(route: ModelRoute, req: TranscriptionRequest, usage: TokenUsage | null, seconds: number | null, text: string | null): Metered {
  if (usage && hasTokenPrices(route.price)) return { usage };
  if (quantityUnitOf(route.price) === 'milliseconds') return { quantity: billedMs(req, seconds), unit: 'milliseconds' };
  const audio = Math.ceil((billedMs(req, seconds) / 1000) * AUDIO_TOKENS_PER_SECOND);
  const prompt = estimateTokens(promptOf(req));
  return { usage: { ...NO_TOKENS, input: audio + prompt, audioInput: audio, output: estimateTokens(text ?? '') } };
}

const shared = {
  adapterOf: (adapters: { audio: Partial<Record<string, AudioAdapter>> }, channel: { type: string }) => adapters.audio[channel.type],
  hold: (req: TranscriptionRequest) => {
    const ms = heldMs(req);
    const seconds = ms / 1000;
    return {
      quantity: ms,
      promptTokens: Math.ceil(seconds * AUDIO_TOKENS_PER_SECOND) + estimateTokens(promptOf(req)),
      maxCompletionTokens: Math.ceil(seconds * OUTPUT_TOKENS_PER_SECOND) + OUTPUT_TOKENS_BASE,
    };
  },
};

/** POST /v1/audio/transcriptions and /translations: the answer's body and Content-Type as the upstream sent them. */
export const transcriptionEndpoint: UnaryEndpoint<TranscriptionRequest, AudioAdapter, TranscriptionResult, TranscriptionResult> = {
  ...shared,
  name: 'transcription',
  reason: 'transcription',
  call: (adapter, req, call) => adapter.transcribe(req, call),
  metered: (r, _estimate, { req, route }) => transcriptionMetered(route, req, r.usage, r.seconds, r.text),
  body: (r) => r,
};

/** `stream=true`: the SSE events relayed whole; the usage of `transcript.text.done` bills the call. */
export const transcriptionStreamEndpoint: StreamEndpoint<TranscriptionRequest, AudioAdapter, ByteChunk, ByteSink> = {
  ...shared,
  name: 'transcription',
  reason: 'transcription',
  open: (adapter, req, call) => adapter.transcribeStream(req, call),
  wire: ({ req, route, sink, stream }) => byteWire(sink, stream as ByteStream, (usage) => transcriptionMetered(route, req, usage ?? null, null, null)),
};
