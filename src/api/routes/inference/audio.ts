import multipart from '@fastify/multipart';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { audioDurationMs } from '../../../domain/audio/duration';
import { ValidationError } from '../../../domain/errors';
import type { AudioFile, TranscriptionRequest } from '../../../domain/ports/audio';
import { speechEndpoint } from '../../../domain/relay/endpoints/speech';
import { transcriptionEndpoint, transcriptionStreamEndpoint } from '../../../domain/relay/endpoints/transcriptions';
import type { GatewayDeps } from '../../deps';
import { parseBody } from '../../parse-body';
import { asMalformedForm, fieldWithin, readWithin } from '../../multipart-form';
import { speechBody, transcriptionFields } from '../../../schemas/audio';
import { transcriptionForm } from '../../../schemas/forms';
import { speechResponse, transcriptionResponse } from '../../../schemas/responses';
import { byteSink, callerOf } from './relay-transport';

/** The largest audio file, counted on the bytes read (OpenAI's own limit). */
export const AUDIO_FILE_LIMIT_BYTES = 25 * 1024 * 1024;
/** Everything else a transcription form may carry: its text fields. */
const FIELDS_LIMIT_BYTES = 1024 * 1024;
const LIMITS = { files: 1, fields: 32, fieldSize: 64 * 1024, parts: 40, fileSize: AUDIO_FILE_LIMIT_BYTES };

/**
 * POST /v1/audio/speech (JSON; the audio relayed as it arrives), POST /v1/audio/transcriptions and
 * /v1/audio/translations (multipart, the file up to 25 MB; the answer's body and Content-Type as the upstream sent
 * them). Their own body limit, above the global JSON one.
 */
export const audioRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  await app.register(multipart, { limits: LIMITS, throwFileSizeLimit: true });

  app.post('/v1/audio/speech', { onRequest: [app.requireApiKey, app.limitKey], schema: { body: speechBody, response: speechResponse } }, async (request, reply) => {
    await deps.engine.stream(speechEndpoint, request.body, callerOf(request, reply), byteSink(request, reply));
    return reply;
  });

  for (const task of ['transcriptions', 'translations'] as const) {
    const schema = {
      consumes: ['multipart/form-data'],
      form: transcriptionForm,
      description: 'multipart form: file (up to 25 MB), model, language, prompt, response_format, temperature, timestamp_granularities[], stream',
      response: transcriptionResponse,
    };
    // bodyLimit: a declared Content-Length over it is a 413 before anything is read (request-guards.ts).
    app.post(`/v1/audio/${task}`, { onRequest: [app.requireApiKey, app.limitKey], schema, bodyLimit: AUDIO_FILE_LIMIT_BYTES + FIELDS_LIMIT_BYTES }, async (request, reply) => {
      const req = await readTranscriptionForm(request, task).catch((err) => asMalformedForm(err, request));
      return transcribe(deps, req, request, reply);
    });
  }
};

async function transcribe(deps: GatewayDeps, req: TranscriptionRequest, request: FastifyRequest, reply: FastifyReply) {
  const caller = callerOf(request, reply);
  if (req.stream) {
    await deps.engine.stream(transcriptionStreamEndpoint, req, caller, byteSink(request, reply));
    return reply;
  }
  const result = await deps.engine.unary(transcriptionEndpoint, req, caller);
  return reply.type(result.contentType).send(result.body);
}

async function readTranscriptionForm(request: FastifyRequest, task: TranscriptionRequest['task']): Promise<TranscriptionRequest> {
  if (!request.isMultipart()) throw new ValidationError('body: must be multipart/form-data with a file and a model', null);
  const fileBudget = { left: AUDIO_FILE_LIMIT_BYTES };
  const fieldBudget = { left: FIELDS_LIMIT_BYTES };
  const fields: Array<[string, string]> = [];
  let file: AudioFile | undefined;
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      if (part.fieldname !== 'file') throw new ValidationError(`${part.fieldname}: unexpected file field`, part.fieldname);
      file = { data: await readWithin(part.file, fileBudget), filename: part.filename || 'audio', contentType: part.mimetype || 'application/octet-stream' };
      continue;
    }
    fields.push([part.fieldname, fieldWithin(part, fieldBudget)]);
  }
  if (!file || file.data.length === 0) throw new ValidationError('file: is required (the audio to transcribe)', 'file');
  const f = parseBody(transcriptionFields, Object.fromEntries(fields));
  return {
    model: f.model,
    task,
    file,
    fields: fields.filter(([k]) => k !== 'model'),
    responseFormat: f.response_format ?? 'json',
    // Translations have no stream: the field passes through and the answer comes whole.
    stream: task === 'transcriptions' && f.stream === 'true',
    durationMs: await audioDurationMs(file.data, file.contentType),
  };
}
