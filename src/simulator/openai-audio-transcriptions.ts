import { simulatorModel } from './catalog';
import { openaiError } from './errors';
import { charCount, digest } from './hash';
import type { Form, FormFile } from './multipart';
import { dataEvent, json, raw, sse } from './reply';
import { splitTokens } from './tokens';
import { audioSeconds, srt, transcribe, vtt, type Transcript } from './transcript';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject, requireString, type Problem } from './validate';

/** OpenAI's upload limit for audio files. */
export const MAX_AUDIO_FILE_BYTES = 25 * 1024 * 1024;
const FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'];
const TOKEN_FORMATS = ['json', 'text'];
const GRANULARITIES = ['word', 'segment'];
/** gpt-4o(-mini)-transcribe: billed in tokens, json/text only, can stream. whisper-1 (and other ids): billed by duration. */
const TOKEN_MODELS = /gpt-4o/;

type Task = 'transcribe' | 'translate';

/** POST /v1/audio/transcriptions (multipart). */
export function audioTranscriptions(ctx: HandlerContext): Reply {
  return audio(ctx, 'transcribe');
}

/** POST /v1/audio/translations (multipart): whisper-1 only, never streams, no usage in json. */
export function audioTranslations(ctx: HandlerContext): Reply {
  return audio(ctx, 'translate');
}

interface Request {
  file: FormFile;
  format: string;
  prompt: string;
  words: boolean;
  stream: boolean;
  tokens: boolean;
}

/**
 * The transcript (transcript.ts) comes from the file's bytes alone, so a transcription and a translation of one
 * file say the same words. Usage rules: whisper-1 `{type:'duration', seconds: ceil(duration)}`; the token models
 * `audio_tokens = ceil(seconds × 10)`, `text_tokens = ceil(prompt characters / 4)`, `output_tokens = ceil(words × 1.3)`.
 */
function audio(ctx: HandlerContext, task: Task): Reply {
  const parsed = parse(ctx, task);
  if ('problem' in parsed) return openaiError(parsed.problem.status ?? 400, parsed.problem);
  const r = parsed.request;
  const seconds = audioSeconds(r.file.data);
  const t = transcribe(digest('transcript', r.file.data), seconds);
  const usage = task === 'translate' ? undefined : r.tokens ? tokenUsage(r, seconds, t) : { type: 'duration', seconds: Math.ceil(seconds) };

  if (r.stream) {
    const events = splitTokens(t.text, ctx.streamChunks).map((delta) => dataEvent({ type: 'transcript.text.delta', delta }));
    events.push(dataEvent({ type: 'transcript.text.done', text: t.text, usage }));
    return sse(events);
  }
  switch (r.format) {
    case 'text': return raw(200, 'text/plain; charset=utf-8', `${t.text}\n`);
    case 'srt': return raw(200, 'text/plain; charset=utf-8', srt(t.segments));
    case 'vtt': return raw(200, 'text/vtt; charset=utf-8', vtt(t.segments));
    case 'verbose_json': return json(200, verbose(task, seconds, t, r.words, usage));
    default: return json(200, usage ? { text: t.text, usage } : { text: t.text });
  }
}

function tokenUsage(r: Request, seconds: number, t: Transcript) {
  const audioTokens = Math.ceil(seconds * 10);
  const textTokens = Math.ceil(charCount(r.prompt) / 4);
  const output = Math.ceil(t.words.length * 1.3);
  const input = audioTokens + textTokens;
  return { type: 'tokens', input_tokens: input, input_token_details: { audio_tokens: audioTokens, text_tokens: textTokens }, output_tokens: output, total_tokens: input + output };
}

function verbose(task: Task, seconds: number, t: Transcript, words: boolean, usage: object | undefined) {
  const segments = t.segments.map((s) => ({
    id: s.id,
    seek: Math.floor(s.start / 30) * 3000,
    start: s.start,
    end: s.end,
    text: s.text,
    tokens: [],
    temperature: 0,
    avg_logprob: -0.2,
    compression_ratio: 1.2,
    no_speech_prob: 0.01,
  }));
  return {
    task,
    language: 'english',
    duration: Math.round(seconds * 1000) / 1000,
    text: t.text,
    segments,
    ...(words ? { words: t.words.map((w) => ({ word: w.word, start: w.start, end: w.end })) } : {}),
    ...(usage ? { usage } : {}),
  };
}

function parse(ctx: HandlerContext, task: Task): { request: Request } | { problem: Problem } {
  const form = ctx.body as Form | undefined;
  if (!isObject(form) || !isObject(form.fields) || !Array.isArray(form.files)) {
    return { problem: { message: 'Expected a multipart/form-data body.', param: null, code: 'invalid_request' } };
  }
  const file = form.files.find((f) => f.name === 'file');
  if (!file) return { problem: { message: "Missing required parameter: 'file'.", param: 'file', code: 'missing_required_parameter' } };
  if (file.data.length > MAX_AUDIO_FILE_BYTES) {
    return { problem: { status: 413, message: `Maximum content size limit (${MAX_AUDIO_FILE_BYTES}) exceeded (${file.data.length} bytes read)`, param: 'file', code: 'file_too_large' } };
  }
  if (file.data.length === 0) return { problem: { message: 'The audio file is empty.', param: 'file', code: 'invalid_value' } };
  const f = form.fields;
  const p = requireString(f, 'model');
  if (p) return { problem: p };
  const model = f.model;
  const format = f.response_format ?? 'json';
  if (!FORMATS.includes(format)) {
    return { problem: { message: `Invalid 'response_format': expected one of ${FORMATS.map((x) => `'${x}'`).join(', ')}, got '${format}'.`, param: 'response_format', code: 'invalid_value' } };
  }
  if (f.temperature !== undefined) {
    const t = Number(f.temperature);
    if (f.temperature.trim() === '' || !(t >= 0 && t <= 1)) return { problem: { message: `Invalid 'temperature': expected a number between 0 and 1, got '${f.temperature}'.`, param: 'temperature', code: 'invalid_value' } };
  }
  const granularities = form.lists['timestamp_granularities[]'] ?? form.lists.timestamp_granularities ?? [];
  const bad = granularities.find((g) => !GRANULARITIES.includes(g));
  if (bad !== undefined) return { problem: { message: `Invalid 'timestamp_granularities': expected 'word' or 'segment', got '${bad}'.`, param: 'timestamp_granularities', code: 'invalid_value' } };
  const modelProblem = checkModel(model, 'transcription', ctx.strictModels);
  if (modelProblem) return { problem: modelProblem };
  const tokens = TOKEN_MODELS.test(model);
  if (task === 'translate' && (tokens || (simulatorModel(model) !== undefined && model !== 'whisper-1'))) {
    return { problem: { message: `The model \`${model}\` does not support translations; use whisper-1.`, param: 'model', code: 'model_not_supported' } };
  }
  if (tokens && !TOKEN_FORMATS.includes(format)) {
    return { problem: { message: `response_format '${format}' is not compatible with model '${model}'. Use 'json' or 'text' instead.`, param: 'response_format', code: 'unsupported_value' } };
  }
  return {
    request: {
      file,
      format,
      prompt: f.prompt ?? '',
      words: format === 'verbose_json' && granularities.includes('word'),
      // whisper-1 ignores `stream`, as OpenAI's does; translations never stream.
      stream: task === 'transcribe' && tokens && f.stream === 'true',
      tokens,
    },
  };
}
