import { z } from 'zod';

/** POST /v1/audio/speech: the bounds OpenAI documents; anything else passes through to the upstream. */
export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;

export const speechBody = z.looseObject({
  model: z.string({ error: 'must be a string' }).min(1, 'is required'),
  input: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(4096, 'must be at most 4096 characters'),
  voice: z.union([z.string().min(1), z.looseObject({ id: z.string().min(1) })], { error: 'must be a voice name or {id}' }),
  instructions: z.string({ error: 'must be a string' }).max(4096, 'must be at most 4096 characters').optional(),
  response_format: z.enum(SPEECH_FORMATS, { error: `must be one of ${SPEECH_FORMATS.join(', ')}` }).optional(),
  speed: z.number({ error: 'must be a number' }).min(0.25, 'must be at least 0.25').max(4, 'must be at most 4').optional(),
  stream_format: z.enum(['sse', 'audio'], { error: "must be 'sse' or 'audio'" }).optional(),
});

export type SpeechBody = z.infer<typeof speechBody>;

export const TRANSCRIPTION_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;

/** The text fields of a transcription or translation form (the file is read apart, counted on the bytes read). */
export const transcriptionFields = z.looseObject({
  model: z.string({ error: 'is required' }).min(1, 'is required'),
  language: z.string().max(64, 'must be at most 64 characters').optional(),
  prompt: z.string().max(16_384, 'must be at most 16384 characters').optional(),
  response_format: z.enum(TRANSCRIPTION_FORMATS, { error: `must be one of ${TRANSCRIPTION_FORMATS.join(', ')}` }).optional(),
  temperature: z.coerce.number({ error: 'must be a number' }).min(0, 'must be at least 0').max(1, 'must be at most 1').optional(),
  stream: z.enum(['true', 'false'], { error: "must be 'true' or 'false'" }).optional(),
});

export type TranscriptionFields = z.infer<typeof transcriptionFields>;
