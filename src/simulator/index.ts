/**
 * The upstream simulator: a real HTTP server (plain node:http, 127.0.0.1) that stands in for the
 * third-party providers in tests, benchmarks and on a fresh `npm start`.
 *
 * OpenAI-compatible, base `${url}/v1`: POST /chat/completions (plain, streamed, tools, n, max_tokens,
 * stop, usage), POST /embeddings, POST /images/generations, POST /images/edits (multipart),
 * POST /audio/speech (chunked fake audio or SSE), POST /audio/transcriptions and /audio/translations (multipart;
 * json, text, srt, vtt, verbose_json, SSE for the gpt-4o models), POST /moderations (flags the word "kill"),
 * POST /rerank (Jina / vLLM shape), GET /models[/{id}]. Cohere: POST ${url}/v2/rerank. Audio, transcripts, rerank
 * scores and moderation scores are all derived from the request, never from time. Anthropic, base `${url}/v1`:
 * POST /messages (plain and streamed, tools), POST /messages/count_tokens, GET /models with `anthropic-version`.
 *
 * Video, three families, each rooted at `${url}` like our own front door (video-a.ts, video-b.ts, video-c.ts):
 * A POST /v1/videos, GET /v1/videos/{id}[/content], DELETE /v1/videos/{id} (cancel); B POST
 * /vendorA/api/v1/services/aigc/video-generation/video-synthesis (`X-Vendor-Async: enable`), GET /v1/tasks/{id},
 * POST /v1/tasks/{id}/cancel; C POST /vendorB/v1/api/video/submit, GET /vendorB/v1/api/video/status/{taskId},
 * POST /vendorB/v1/api/video/cancel/{taskId}. Tasks live in memory and finish `videoGenerationMs` after
 * submission (per request `x-sim-video-ms: <n>`); they fail with `videoFailureRate` (seeded by `videoSeed`), a
 * `video-fail` fault (`addFault({kind:'video-fail'})` or `x-sim-fault: video-fail`), or a prompt with the word
 * "fail". Finished videos are a deterministic 4 KiB fake MP4 at GET /files/video/{id}.mp4 (no auth, `Range`
 * honoured). Unfinished polls carry `retry-after`.
 *
 * Answers are deterministic (answers.ts), tokens are counted by a simple documented rule (tokens.ts).
 * Faults: `addFault` (status, reset, reset-mid-stream, stall, stall-mid-stream), or per request the
 * header `x-sim-fault: status=503 | reset | reset-mid-stream | stall | stall-mid-stream`, and
 * `x-sim-latency-ms: <n>` to override the latency for one request.
 */
export { startSimulator } from './server';
export type { Simulator, SimulatorFault, SimulatorFaultKind, SimulatorOptions, SimulatorRequestRecord } from './types';
export { countTokens, IMAGE_TOKENS } from './tokens';
export { DEFAULT_EMBEDDING_DIMENSIONS } from './openai-embeddings';
export { TINY_PNG, TINY_PNG_BASE64 } from './png';
export { FAKE_MP4_BYTES, fakeMp4, parseRange, VideoStore } from './video-store';
export type { VideoFamily, VideoSnapshot, VideoTask } from './video-store';
export { VIDEO_SUBMIT_PATHS } from './routes';
export { SIMULATOR_MODELS, type SimulatorModel } from './catalog';
