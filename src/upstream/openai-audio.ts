import type { AudioAdapter, TranscriptionRequest, TranscriptionResult } from '../domain/ports/audio';
import type { UpstreamCall } from '../domain/ports/upstream';
import { audioSecondsOf, usageFromAudio } from '../domain/pricing/usage-readers';
import { byteStream, eventJson, rawChunks, sseChunks } from './byte-stream';
import { readAll } from './http';
import { MultipartBuilder } from './multipart-builder';
import { post } from './openai-http';

/**
 * Speech and transcription on an OpenAI-compatible upstream: `${base_url}/audio/speech` (JSON in, the audio's bytes
 * or SSE out, relayed as they arrive) and `/audio/transcriptions` | `/audio/translations` (the client's form again,
 * `model` mapped; the answer's body and Content-Type unchanged).
 */
export function createOpenAiAudioAdapter(): AudioAdapter {
  return {
    async speech(req, call) {
      const sse = req.stream_format === 'sse';
      const res = await post(call, '/audio/speech', JSON.stringify({ ...req, model: call.upstreamModel }), 'application/json', sse ? 'text/event-stream' : '*/*');
      const isSse = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
      return byteStream(res, isSse ? speechEvents : rawChunks);
    },
    async transcribe(req, call) {
      const res = await post(call, `/audio/${req.task}`, ...formOf(req, call, false));
      const body = await readAll(res);
      return readTranscription(body, String(res.headers['content-type'] ?? 'application/octet-stream'), req);
    },
    async transcribeStream(req, call) {
      const res = await post(call, `/audio/${req.task}`, ...formOf(req, call, true), 'text/event-stream');
      const isSse = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
      return byteStream(res, isSse ? transcriptEvents : rawChunks);
    },
  };
}

const speechEvents = sseChunks((ev) => {
  const json = eventJson(ev);
  return json?.type === 'speech.audio.done' ? (usageFromAudio(json.usage, 'audio') ?? undefined) : undefined;
});

const transcriptEvents = sseChunks((ev) => {
  const json = eventJson(ev);
  return json?.type === 'transcript.text.done' ? (usageFromAudio(json.usage, 'text') ?? undefined) : undefined;
});

function formOf(req: TranscriptionRequest, call: UpstreamCall, stream: boolean): [Buffer, string] {
  const form = new MultipartBuilder();
  form.field('model', call.upstreamModel);
  for (const [k, v] of req.fields) if (k !== 'stream') form.field(k, v);
  if (stream) form.field('stream', 'true');
  form.file('file', req.file.filename, req.file.contentType, req.file.data);
  return [form.finish(), form.contentType];
}

/** What a plain answer reports: JSON answers carry usage or a duration and the text; the text format is the text. */
function readTranscription(body: Buffer, contentType: string, req: TranscriptionRequest): TranscriptionResult {
  const result: TranscriptionResult = { body, contentType, usage: null, seconds: null, text: null };
  if (req.responseFormat === 'text') return { ...result, text: body.toString('utf8') };
  if (req.responseFormat !== 'json' && req.responseFormat !== 'verbose_json') return result;
  try {
    const json: unknown = JSON.parse(body.toString('utf8'));
    if (!json || typeof json !== 'object' || Array.isArray(json)) return result;
    const j = json as Record<string, unknown>;
    return { ...result, usage: usageFromAudio(j.usage, 'text'), seconds: audioSecondsOf(j), text: typeof j.text === 'string' ? j.text : null };
  } catch {
    return result;
  }
}
