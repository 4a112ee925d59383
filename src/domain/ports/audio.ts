import type { SpeechBody } from '../../schemas/audio';
import type { TokenUsage } from '../pricing/usage';
import type { UpstreamCall } from './upstream';

/** POST /v1/audio/speech body as the route validated it (src/schemas/audio.ts). */
export type SpeechRequest = SpeechBody;

/** Bytes of an upstream answer as they arrived: audio, or whole SSE events (which may report usage). */
export interface ByteChunk {
  data: Buffer;
  /** The usage an SSE event reported (speech.audio.done, transcript.text.done). */
  usage?: TokenUsage;
}

/** A started byte stream: the upstream accepted the call (2xx). */
export interface ByteStream extends AsyncIterable<ByteChunk> {
  /** The upstream's Content-Type, passed on to the client. */
  readonly contentType: string;
  cancel(): void;
}

/** The uploaded audio of a transcription or translation, read whole (at most the route's limit). */
export interface AudioFile {
  data: Buffer;
  filename: string;
  contentType: string;
}

/** POST /v1/audio/transcriptions or /translations, read from its multipart form. */
export interface TranscriptionRequest {
  model: string;
  task: 'transcriptions' | 'translations';
  file: AudioFile;
  /** Every text field but `model`, in form order (a field may repeat: `timestamp_granularities[]`). */
  fields: Array<[string, string]>;
  responseFormat: 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt';
  stream: boolean;
  /** The audio's length read from the file's header; undefined when it could not be read. */
  durationMs?: number;
}

/** A plain transcription answer: the upstream's body and Content-Type unchanged, and what it reported. */
export interface TranscriptionResult {
  body: Buffer;
  contentType: string;
  /** Token usage (`usage.type: tokens`), or null. */
  usage: TokenUsage | null;
  /** Seconds of audio the upstream reported (`usage.type: duration`, or verbose_json's `duration`), or null. */
  seconds: number | null;
  /** The transcript's text, when the answer was JSON (a local count of output tokens). */
  text: string | null;
}

/** Speech and transcription on a channel type (`openai`). */
export interface AudioAdapter {
  speech(req: SpeechRequest, call: UpstreamCall): Promise<ByteStream>;
  transcribe(req: TranscriptionRequest, call: UpstreamCall): Promise<TranscriptionResult>;
  /** `stream=true`: SSE events (`transcript.text.delta` / `transcript.text.done`) as they arrive. */
  transcribeStream(req: TranscriptionRequest, call: UpstreamCall): Promise<ByteStream>;
}
