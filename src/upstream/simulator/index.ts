/**
 * The upstream simulator: a real HTTP server (plain node:http, 127.0.0.1) that stands in for the
 * third-party providers in tests, benchmarks and on a fresh `npm start`.
 *
 * OpenAI-compatible, base `${url}/v1`: POST /chat/completions (plain, streamed, tools, n, max_tokens,
 * stop, usage), POST /embeddings, POST /images/generations, POST /images/edits (multipart),
 * GET /models[/{id}]. Anthropic, base `${url}/v1`: POST /messages (plain and streamed, tools),
 * POST /messages/count_tokens, GET /models with `anthropic-version`.
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
