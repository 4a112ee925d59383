import { z } from 'zod';

/**
 * Response shapes of every route, for the OpenAPI document. They document the contract; they do not filter
 * what is sent (see `documentingSerializerCompiler` in src/api/plugins/openapi.ts): relayed bodies keep every
 * field the upstream added, so inference shapes are open (`z.looseObject`).
 */

// ---- error bodies, one per family -------------------------------------------------------------------------

export const managementError = z.object({ success: z.literal(false), message: z.string() }).meta({ id: 'ManagementError' });

export const openAiError = z
  .object({
    error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string().nullable() }),
  })
  .meta({ id: 'OpenAIError' });

export const anthropicError = z
  .object({ type: z.literal('error'), error: z.object({ type: z.string(), message: z.string() }) })
  .meta({ id: 'AnthropicError' });

export const geminiError = z
  .object({ error: z.object({ code: z.int(), message: z.string(), status: z.string() }) })
  .meta({ id: 'GeminiError' });

type Schema = z.ZodType;

/** The error statuses a route of a family can answer, each with the family's body. */
function errors(body: Schema, statuses: readonly number[]): Record<number, Schema> {
  return Object.fromEntries(statuses.map((s) => [s, body]));
}

const MANAGEMENT_ERRORS = [400, 401, 404, 413, 429, 500] as const;
const INFERENCE_ERRORS = [400, 401, 403, 404, 413, 429, 500, 502, 503] as const;

export const managementErrors = errors(managementError, MANAGEMENT_ERRORS);
export const openAiErrors = errors(openAiError, INFERENCE_ERRORS);
export const anthropicErrors = errors(anthropicError, INFERENCE_ERRORS);
export const geminiErrors = errors(geminiError, INFERENCE_ERRORS);

/** `{200: success}` plus the family's errors. */
export const managementResponse = (success: Schema) => ({ 200: success, ...managementErrors });
export const openAiResponse = (success: Schema) => ({ 200: success, ...openAiErrors });

// ---- management ---------------------------------------------------------------------------------------------

/** The management envelope of the spec: `{success, message, data}`. */
export const envelope = <T extends Schema>(data: T) => z.object({ success: z.literal(true), message: z.string(), data });

export const tokenRecord = z
  .object({
    id: z.int(),
    user_id: z.int(),
    key: z.string().describe('the plain key WITHOUT the sk- prefix'),
    status: z.int().describe('1 enabled, 2 disabled (3 expired and 4 exhausted read back as derived states)'),
    name: z.string(),
    group: z.string(),
    models: z.string().describe('comma-separated allowlist; empty = no restriction'),
    remain_quota: z.int(),
    unlimited_quota: z.boolean(),
    used_quota: z.int(),
    expired_time: z.int().describe('Unix seconds; -1 = never'),
    created_time: z.int(),
    accessed_time: z.int(),
    model_limits: z.string(),
    model_limits_enabled: z.boolean(),
    allow_ips: z.string(),
    batch_id: z.int().nullable(),
    rpm_limit: z.int().describe('requests per minute; 0 = no limit of its own (its group\'s default applies)'),
    tpm_limit: z.int().describe('billed tokens per minute; 0 = no limit of its own'),
    max_concurrency: z.int().describe('requests in flight at once, streams included; 0 = no limit of its own'),
    period_quota: z.int().describe('credits the key may spend per quota_period, on top of remain_quota; 0 = none of its own'),
    quota_period: z.enum(['day', 'week', 'month']).nullable().describe('calendar-aligned in UTC; weeks start on Monday'),
  })
  .meta({ id: 'TokenRecord' });

/** GET /api/token/{id}/limits: the limits in force (0 = none) and the use of them right now, over all replicas. */
export const keyLimitsView = z
  .object({
    rpm_limit: z.int().describe('in force: the key\'s own, else its group\'s default'),
    tpm_limit: z.int(),
    max_concurrency: z.int(),
    minute_requests: z.int().describe('requests admitted this minute (counted only under a requests or tokens limit)'),
    minute_tokens: z.int().describe('tokens billed this minute (counted only under a tokens limit)'),
    in_flight: z.int().describe('requests running now (counted only under a concurrency limit)'),
    reset_seconds: z.int().describe('seconds until the minute ends'),
    period_quota: z.int().describe('in force: the key\'s own periodic budget, else its group\'s; 0 = none'),
    quota_period: z.enum(['day', 'week', 'month']).nullable(),
    period_used: z.int().describe('credits held or billed in the current period'),
    period_resets_at: z.int().nullable().describe('Unix seconds when the next period begins'),
  })
  .meta({ id: 'KeyLimits' });

export const batchRecord = z
  .object({
    id: z.int(),
    kind: z.enum(['issue', 'status', 'rotate']),
    status: z.enum(['running', 'completed', 'failed', 'cancelled']),
    phase: z.enum(['issuing', 'grace', 'updating', 'disabling', 'done']).nullable(),
    requested: z.int(),
    created: z.int(),
    changed: z.int(),
    processed: z.int(),
    source_batch_id: z.int().nullable(),
    params: z.record(z.string(), z.unknown()),
    error: z.string().nullable(),
    note: z.string().nullable(),
    started_time: z.int(),
    finished_time: z.int().nullable(),
    grace_ends_time: z.int().nullable(),
  })
  .meta({ id: 'BatchRecord' });

/** How prompt_tokens (every input token) and completion_tokens (every output token) split by usage dimension. */
export const tokenDetails = {
  cache_read_tokens: z.int().describe('prompt tokens read from the provider\'s prompt cache'),
  cache_write_tokens: z.int().describe('prompt tokens written to the prompt cache (5-minute and 1-hour)'),
  cache_write_1h_tokens: z.int().describe('of cache_write_tokens, 1-hour writes'),
  reasoning_tokens: z.int().describe('of completion_tokens, reasoning'),
  image_input_tokens: z.int().describe('of the uncached prompt tokens, image input'),
  audio_input_tokens: z.int().describe('of the uncached prompt tokens, audio input'),
  audio_output_tokens: z.int().describe('of completion_tokens, audio output'),
};

export const callLogEntry = z
  .looseObject({
    id: z.int(),
    created_at: z.int(),
    request_id: z.string(),
    token_name: z.string(),
    model_name: z.string(),
    quota: z.int(),
    prompt_tokens: z.int().describe('every input token, cache reads and writes included'),
    completion_tokens: z.int().describe('every output token, reasoning included'),
    ...tokenDetails,
    units: z.int().describe('the quantity billed, in `unit`'),
    unit: z.string().describe("what `units` counts: characters, milliseconds (of audio), search_units, images, videos; '' for calls billed by tokens"),
    use_time: z.number(),
    is_stream: z.boolean(),
  })
  .meta({ id: 'CallLogEntry' });

export const callLogTotals = z.object({
  quota: z.int(),
  count: z.int(),
  prompt_tokens: z.int(),
  completion_tokens: z.int(),
  ...tokenDetails,
});

export const auditEvent = z
  .object({
    id: z.int(),
    action: z.string(),
    target_type: z.string(),
    target_id: z.string().nullable(),
    request_id: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
    created_at: z.int(),
  })
  .meta({ id: 'AuditEvent' });

// ---- inference ----------------------------------------------------------------------------------------------

const usage = z.looseObject({ prompt_tokens: z.int(), completion_tokens: z.int().optional(), total_tokens: z.int() });

const assistantMessage = z.looseObject({ role: z.string(), content: z.string().nullable() });

export const chatCompletion = z
  .looseObject({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.int(),
    model: z.string(),
    choices: z.array(z.looseObject({ index: z.int(), message: assistantMessage, finish_reason: z.string().nullable() })),
    usage: usage.optional(),
  })
  .describe('With stream=true the response is text/event-stream: `data: <chat.completion.chunk>` lines ending with `data: [DONE]`.')
  .meta({ id: 'ChatCompletion' });

export const modelEntry = z
  .object({ id: z.string(), object: z.literal('model'), created: z.int(), owned_by: z.string() })
  .meta({ id: 'Model' });

export const modelList = z.object({ object: z.literal('list'), data: z.array(modelEntry) }).meta({ id: 'ModelList' });

export const embeddingList = z
  .looseObject({
    object: z.literal('list'),
    data: z.array(
      z.looseObject({
        object: z.literal('embedding'),
        index: z.int(),
        embedding: z.union([z.array(z.number()), z.string().describe('base64 of little-endian float32')]),
      }),
    ),
    model: z.string(),
    usage: z.looseObject({ prompt_tokens: z.int(), total_tokens: z.int() }),
  })
  .meta({ id: 'EmbeddingList' });

export const imagesResponse = z
  .looseObject({
    created: z.int(),
    data: z.array(z.looseObject({ url: z.string().optional(), b64_json: z.string().optional(), revised_prompt: z.string().optional() })),
  })
  .meta({ id: 'ImagesResponse' });

export const anthropicMessage = z
  .looseObject({
    id: z.string(),
    type: z.literal('message'),
    role: z.literal('assistant'),
    model: z.string(),
    content: z.array(z.looseObject({ type: z.string() })),
    stop_reason: z.string().nullable(),
    usage: z.looseObject({ input_tokens: z.int(), output_tokens: z.int() }),
  })
  .describe('With stream=true the response is text/event-stream with the native event sequence.')
  .meta({ id: 'AnthropicMessage' });

export const billingSubscription = z.object({
  object: z.literal('billing_subscription'),
  has_payment_method: z.boolean(),
  soft_limit_usd: z.number(),
  hard_limit_usd: z.number(),
  system_hard_limit_usd: z.number(),
  access_until: z.int(),
});

export const billingUsage = z.object({ object: z.literal('list'), total_usage: z.number().describe('US cents') });

// ---- probes -------------------------------------------------------------------------------------------------

export const healthz = z.object({ status: z.literal('ok') });

export const readyz = z.object({
  status: z.enum(['ready', 'unavailable']),
  checks: z.object({ database: z.string(), temporal: z.string(), processes: z.string().optional() }),
});

// ---- video families -----------------------------------------------------------------------------------------

export const videoAError = z
  .object({ error: z.object({ code: z.string(), message: z.string(), type: z.string() }) })
  .meta({ id: 'VideoAError' });
export const videoBError = z.object({ code: z.string(), message: z.string(), request_id: z.string() }).meta({ id: 'VideoBError' });
export const videoCError = z
  .object({
    success: z.literal(false),
    message: z.string(),
    error_code: z.string(),
    details: z.object({ field: z.string(), reason: z.string() }),
  })
  .meta({ id: 'VideoCError' });

const taskError = z.object({ code: z.string(), message: z.string() });

export const videoATask = z
  .looseObject({
    id: z.string(),
    object: z.literal('video'),
    created: z.int(),
    status: z.enum(['queued', 'processing', 'completed', 'failed']),
    model: z.string(),
    prompt: z.string().optional(),
    progress: z.int().optional(),
    url: z.string().optional().describe('content read: signed link to the file, valid 24 hours, no credentials'),
    duration: z.int().nullable().optional(),
    resolution: z.string().nullable().optional(),
    error: taskError.optional(),
  })
  .meta({ id: 'VideoATask' });

export const videoBSubmitted = z.object({ output: z.object({ task_id: z.string(), task_status: z.literal('PENDING') }), request_id: z.string() });

export const videoBTask = z
  .looseObject({
    status: z.enum(['submitted', 'in_progress', 'completed', 'failed']),
    progress: z.int(),
    result_url: z.string().nullable(),
    task_id: z.string(),
    error: taskError.optional(),
  })
  .meta({ id: 'VideoBTask' });

export const videoCTask = z
  .object({
    success: z.literal(true),
    data: z.looseObject({
      taskId: z.string(),
      pollingUrl: z.string(),
      status: z.enum(['processing', 'completed', 'failed']),
      message: z.string(),
      video_url: z.string().optional(),
    }),
  })
  .meta({ id: 'VideoCTask' });

const VIDEO_ERRORS = [400, 401, 403, 404, 409, 429, 500, 503] as const;
export const videoAResponse = (success: Schema) => ({ 200: success, ...errors(videoAError, VIDEO_ERRORS) });
export const videoBResponse = (success: Schema) => ({ 200: success, ...errors(videoBError, VIDEO_ERRORS) });
export const videoCResponse = (success: Schema) => ({ 200: success, ...errors(videoCError, VIDEO_ERRORS) });

/** GET /v1/videos/{id}/content: the completed task (JSON), or the file's bytes when the client asks for them. */
export const videoAContentResponse = {
  200: {
    description: 'the completed task with its link; with `Accept: application/binary` (the OpenAI clients\' downloadContent) the video file',
    content: { 'application/json': { schema: videoATask }, 'video/mp4': { schema: z.string().describe('binary') } },
  },
  206: { description: 'a byte range of the video file (Accept: application/binary with Range)', content: { 'video/mp4': { schema: z.string().describe('binary') } } },
  416: { description: 'the range asked for is outside the file', content: { 'video/mp4': { schema: z.string().describe('empty; Content-Range names the size') } } },
  ...errors(videoAError, VIDEO_ERRORS),
};

/** GET /api/token/batch/{id}/keys.csv and .jsonl: a streamed file, or a management error. */
export const batchKeysFileResponse = (contentType: string, what: string) => ({
  200: { description: what, content: { [contentType]: { schema: z.string().describe(what) } } },
  ...managementErrors,
});

export const videoFileResponse = {
  200: { description: 'the video file', content: { 'video/mp4': { schema: z.string().describe('binary') } } },
  206: { description: 'a byte range of the video file', content: { 'video/mp4': { schema: z.string().describe('binary') } } },
  416: { description: 'the range asked for is outside the file', content: { 'video/mp4': { schema: z.string().describe('empty; Content-Range names the size') } } },
  ...errors(videoAError, [403, 404, 502]),
};

export const speechResponse = {
  200: {
    description: "the audio in the upstream's Content-Type, relayed as it arrives; with stream_format: sse, the upstream's events",
    content: { 'audio/mpeg': { schema: z.string().describe('binary (audio/mpeg, audio/opus, audio/aac, audio/flac, audio/wav, audio/pcm)') }, 'text/event-stream': { schema: z.string().describe('speech.audio.delta / speech.audio.done events') } },
  },
  ...openAiErrors,
};

export const transcriptionResponse = {
  200: {
    description: "the upstream's answer and Content-Type: JSON for json and verbose_json, text for text, srt and vtt; SSE with stream=true",
    content: {
      'application/json': { schema: z.looseObject({ text: z.string() }).meta({ id: 'Transcription' }) },
      'text/plain': { schema: z.string().describe('text or srt') },
      'text/vtt': { schema: z.string() },
      'text/event-stream': { schema: z.string().describe('transcript.text.delta / transcript.text.done events') },
    },
  },
  ...openAiErrors,
};

export const rerankResult = z
  .looseObject({ results: z.array(z.looseObject({ index: z.int(), relevance_score: z.number() })) })
  .describe("Cohere's {id, results, meta: {billed_units: {search_units}}}, or Jina's {model, usage: {total_tokens}, results} to a Jina client")
  .meta({ id: 'RerankResult' });

export const moderationResult = z.looseObject({ id: z.string(), model: z.string(), results: z.array(z.looseObject({ flagged: z.boolean() })) }).meta({ id: 'ModerationResult' });
