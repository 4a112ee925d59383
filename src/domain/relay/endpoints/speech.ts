import type { AudioAdapter, ByteChunk, ByteStream, SpeechRequest } from '../../ports/audio';
import { hasTokenPrices, quantityUnitOf } from '../../pricing/cost';
import type { ByteSink } from '../caller';
import { localUsage, type StreamEndpoint } from '../engine';
import { estimateTokens } from '../metering';
import { byteWire } from './byte-wire';

/**
 * Audio tokens held per character of input when a speech model is priced by tokens: about 1.4 at normal speed
 * (gpt-4o-mini-tts produces about 21 audio tokens a second, people speak about 15 characters a second), times 4 for
 * the slowest `speed`, rounded up.
 */
export const SPEECH_AUDIO_TOKENS_PER_CHARACTER = 6;

/** Characters, not bytes or UTF-16 units: what a per-character price counts. */
export function characterCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * POST /v1/audio/speech: the upstream's audio (or its SSE events) relayed as it arrives. Billed by the tokens the
 * upstream reports (`speech.audio.done` of an SSE stream) when the model has token prices, else per input character
 * (`input_characters_per_1m`); a token-priced model whose upstream reports nothing is billed its input tokens
 * counted locally.
 */
export const speechEndpoint: StreamEndpoint<SpeechRequest, AudioAdapter, ByteChunk, ByteSink> = {
  name: 'speech',
  reason: 'speech',
  adapterOf: (adapters, channel) => adapters.audio[channel.type],
  hold: (req) => {
    const chars = characterCount(req.input);
    return {
      quantity: chars,
      promptTokens: estimateTokens(req.input) + estimateTokens(req.instructions ?? ''),
      maxCompletionTokens: chars * SPEECH_AUDIO_TOKENS_PER_CHARACTER,
    };
  },
  open: (adapter, req, call) => adapter.speech(req, call),
  wire: ({ req, route, estimate, sink, stream }) =>
    byteWire(sink, stream as ByteStream, (usage) => {
      if (usage && hasTokenPrices(route.price)) return { usage };
      if (quantityUnitOf(route.price) === 'characters') return { quantity: characterCount(req.input), unit: 'characters' };
      return localUsage(estimate.prompt, 0);
    }),
};
