import { fakeAudio, SPEECH_CONTENT_TYPES, SPEECH_FORMATS, type SpeechFormat } from './audio-formats';
import { openaiError } from './errors';
import { charCount, digest, splitBytes } from './hash';
import { dataEvent, sse } from './reply';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject, requireString, type Problem } from './validate';

const MAX_INPUT_CHARS = 4096;
/** Audio bytes per input character, and the least a reply carries (so every format's header fits). */
export const SPEECH_BYTES_PER_CHAR = 200;
export const MIN_SPEECH_BYTES = 1024;
/** The model ids that can stream server-sent events, like OpenAI's gpt-4o-mini-tts (tts-1 cannot). */
const SSE_MODELS = /gpt-4o/;

/**
 * POST /v1/audio/speech (JSON). The answer is `max(1 KiB, 200 bytes × characters of input)` of fake audio in
 * `response_format` (audio-formats.ts), always sent chunked in `streamChunks` pieces, paced by `chunkDelayMs`
 * like chat streams. With `stream_format: 'sse'` the same bytes go out base64-encoded in `speech.audio.delta`
 * events, then `speech.audio.done` with usage. The bytes depend on every field that shapes audio (model, voice,
 * format, speed, instructions, input), never on time.
 */
export function speech(ctx: HandlerContext): Reply {
  const body = ctx.body;
  if (!isObject(body)) return openaiError(400, { message: 'The request body must be a JSON object.' });
  const problem = validate(body, ctx.strictModels);
  if (problem) return openaiError(problem.status ?? 400, problem);

  const model = body.model as string;
  const input = body.input as string;
  const format = (body.response_format ?? 'mp3') as SpeechFormat;
  const voice = typeof body.voice === 'string' ? body.voice : (body.voice as { id: string }).id;
  const chars = charCount(input);
  const length = Math.max(MIN_SPEECH_BYTES, SPEECH_BYTES_PER_CHAR * chars);
  const seed = digest('speech', model, voice, format, String(body.speed ?? 1), String(body.instructions ?? ''), input);
  const audio = fakeAudio(format, length, seed, input);
  const pieces = splitBytes(audio, ctx.streamChunks);

  if (body.stream_format === 'sse') {
    // Usage rule: input = ceil(characters / 4) tokens, output = ceil(audio bytes / 50) tokens.
    const inputTokens = Math.ceil(chars / 4);
    const outputTokens = Math.ceil(length / 50);
    const events = pieces.map((p) => dataEvent({ type: 'speech.audio.delta', audio: p.toString('base64') }));
    events.push(dataEvent({ type: 'speech.audio.done', usage: { input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: inputTokens + outputTokens } }));
    return sse(events);
  }
  return { status: 200, headers: { 'content-type': SPEECH_CONTENT_TYPES[format] }, pieces, stream: true };
}

function validate(body: Record<string, unknown>, strict: boolean): Problem | undefined {
  const p = requireString(body, 'model');
  if (p) return p;
  const input = body.input;
  if (input === undefined) return { message: "Missing required parameter: 'input'.", param: 'input', code: 'missing_required_parameter' };
  if (typeof input !== 'string') return { message: "Invalid type for 'input': expected a string.", param: 'input', code: 'invalid_type' };
  if (input.length === 0) return { message: "Invalid 'input': string too short. Expected a string with minimum length 1, but got an empty string instead.", param: 'input', code: 'string_below_min_length' };
  const chars = charCount(input);
  if (chars > MAX_INPUT_CHARS) {
    return { message: `Invalid 'input': string too long. Expected a string with maximum length ${MAX_INPUT_CHARS}, but got a string with length ${chars} instead.`, param: 'input', code: 'string_above_max_length' };
  }
  const voice = body.voice;
  if (voice === undefined) return { message: "Missing required parameter: 'voice'.", param: 'voice', code: 'missing_required_parameter' };
  if (!((typeof voice === 'string' && voice.length > 0) || (isObject(voice) && typeof voice.id === 'string' && voice.id.length > 0))) {
    return { message: "Invalid 'voice': expected a voice name or an object {id}.", param: 'voice', code: 'invalid_value' };
  }
  const format = body.response_format;
  if (format !== undefined && !(SPEECH_FORMATS as readonly unknown[]).includes(format)) {
    return { message: `Invalid 'response_format': expected one of ${SPEECH_FORMATS.map((f) => `'${f}'`).join(', ')}, got ${JSON.stringify(format)}.`, param: 'response_format', code: 'invalid_value' };
  }
  const speed = body.speed;
  if (speed !== undefined && speed !== null && !(typeof speed === 'number' && speed >= 0.25 && speed <= 4)) {
    return { message: `Invalid 'speed': expected a number between 0.25 and 4, got ${JSON.stringify(speed)}.`, param: 'speed', code: 'invalid_value' };
  }
  if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== 'string') {
    return { message: "Invalid type for 'instructions': expected a string.", param: 'instructions', code: 'invalid_type' };
  }
  const streamFormat = body.stream_format;
  if (streamFormat !== undefined && streamFormat !== 'audio' && streamFormat !== 'sse') {
    return { message: "Invalid 'stream_format': expected 'audio' or 'sse'.", param: 'stream_format', code: 'invalid_value' };
  }
  const model = body.model as string;
  const modelProblem = checkModel(model, 'speech', strict);
  if (modelProblem) return modelProblem;
  if (streamFormat === 'sse' && !SSE_MODELS.test(model)) {
    return { message: 'stream_format sse is not supported for this model', param: 'stream_format', code: 'unsupported_value' };
  }
  return undefined;
}
