import type { BedrockOptions } from './bedrock';
import type { GoogleServiceAccountOptions, SimulatedGoogleAuth } from './vertex';
import type { AzureAdOptions, SimulatedEntra } from './azure';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { VideoStore } from './video-store';
import type { BatchStore } from './batches';

export interface SimulatorOptions {
  /** 0/undefined = a free port; the host is always 127.0.0.1. */
  port?: number;
  /** When set, OpenAI routes require `Authorization: Bearer <apiKey>` and Anthropic routes `x-api-key: <apiKey>`; else 401. */
  apiKey?: string;
  /** Delay before the response (or before the first stream chunk). Default 0. */
  latencyMs?: number;
  /** Delay between stream chunks. Default 0 (then the whole stream goes out in one write). */
  chunkDelayMs?: number;
  /** Content chunks per streamed answer. Default 5. */
  streamChunks?: number;
  /** How many requests `requests` keeps (the newest). Default 1000; 0 records nothing (benchmarks). */
  maxRecords?: number;
  /** When true, a model id not in SIMULATOR_MODELS gets 404 `model_not_found`. Default false: any id is served. */
  strictModels?: boolean;
  /** Video tasks (families A, B, C): time from submission to completed/failed. Default 3000; per request `x-sim-video-ms`. */
  videoGenerationMs?: number;
  /** Share of video tasks (0..1) that end failed, drawn from a PRNG seeded with `videoSeed`. Default 0. */
  videoFailureRate?: number;
  /** The providers' batch APIs: time from a batch's creation to its end. Default 200. */
  batchMs?: number;
  /** Seed of the failure draws: the same seed and submissions give the same failures. Default 1. */
  videoSeed?: number;
  /** Azure OpenAI's Entra ID: the client whose credentials the simulator's token endpoint accepts (azure.ts). */
  azureAd?: AzureAdOptions;
  /** Vertex AI's Google OAuth: the service account (and project) whose JWT assertions `POST /token` accepts (vertex.ts). */
  googleServiceAccount?: GoogleServiceAccountOptions;
  /** AWS Bedrock: the access key whose Signature V4 the simulator verifies, and a Bedrock API key (bedrock.ts). */
  bedrock?: BedrockOptions;
}

/**
 * `video-fail` applies to video submissions only: the submission succeeds and the task later ends `failed`
 * (other requests never use it up).
 */
export type SimulatorFaultKind = 'status' | 'reset' | 'reset-mid-stream' | 'stall' | 'stall-mid-stream' | 'video-fail';

/** Applied to matching requests until cleared or `count` is used up. */
export interface SimulatorFault {
  kind: SimulatorFaultKind;
  /** For 'status': e.g. 429, 500, 503, 400; the body is in the API's own error format. */
  status?: number;
  /** How many requests it affects; default unlimited. */
  count?: number;
  /** Only requests whose path ends with this, e.g. '/chat/completions'. */
  path?: string;
  /** Only this model. */
  model?: string;
}

export interface SimulatorRequestRecord {
  method: string;
  /** Path without the query string (for an Azure address, the OpenAI route it serves). */
  path: string;
  /** The request target as received, query included. */
  url: string;
  /** As received, credentials included (tests assert which upstream key the gateway sent). */
  headers: IncomingHttpHeaders;
  /** Parsed JSON; for multipart: `{fields, files}`; undefined without a body or when it does not parse. */
  body: unknown;
  /** Date.now() when the request arrived. */
  at: number;
}

export interface Simulator {
  /** e.g. http://127.0.0.1:PORT; the OpenAI and the Anthropic base URLs are both `${url}/v1`. */
  url: string;
  port: number;
  /** The Entra ID of `azureAd`, when given: its `mints` count the tokens issued. */
  entra?: SimulatedEntra;
  /** The Google OAuth of `googleServiceAccount`, when given: its `mints` count the tokens issued. */
  google?: SimulatedGoogleAuth;
  setOptions(o: Partial<SimulatorOptions>): void;
  addFault(f: SimulatorFault): void;
  clearFaults(): void;
  /** Deletes the files of every video task finished so far (their links answer 404 from then on), as an upstream
   * does when its links expire; how many it deleted. */
  deleteVideoFiles(): number;
  /** When a video task was submitted here and how long it takes (benchmarks measure from its end); undefined if unknown. */
  videoTiming(id: string): { submittedAt: number; generationMs: number } | undefined;
  /** The last `maxRecords` requests, oldest first (the same array for the simulator's lifetime). */
  requests: SimulatorRequestRecord[];
  resetRecords(): void;
  /** Stops listening and ends every open connection, stalled ones included. */
  close(): Promise<void>;
}

/**
 * Which wire format a request speaks; decides the error body and the auth header. `video-a` answers errors in
 * the OpenAI shape (type `authentication_error` on 401), `video-b` `{code, message, request_id}`, `video-c`
 * `{success:false, message, error_code, details}`, `cohere` (v2 rerank) `{message}` with a bearer key.
 */
export type Api = 'openai' | 'anthropic' | 'gemini' | 'video-a' | 'video-b' | 'video-c' | 'cohere';

/**
 * A response the server writes: `pieces` is the body (one piece) or the stream events (one per
 * chunk, paced by `chunkDelayMs`).
 */
export interface Reply {
  status: number;
  headers: OutgoingHttpHeaders;
  pieces: Array<string | Buffer>;
  stream: boolean;
}

/** What a route handler gets besides the request body. */
export interface HandlerContext {
  /** Parsed JSON body, or the parsed multipart form for multipart requests. */
  body: unknown;
  headers: IncomingHttpHeaders;
  streamChunks: number;
  strictModels: boolean;
  /** The simulator's own URL (for generated image links). */
  baseUrl: string;
  /** A new unique id with this prefix, e.g. `chatcmpl-`. */
  id(prefix: string): string;
  /** The request id this reply goes out with (`x-request-id`); family B repeats it in its bodies. */
  requestId: string;
  /** Video tasks: the store, and what this request asked of them. */
  video: VideoContext;
  /** The providers' batch APIs: files, OpenAI batches, Anthropic message batches. */
  batches: BatchStore;
}

/** What video handlers get: the task store, the generation time for a new task, and whether it must fail. */
export interface VideoContext {
  store: VideoStore;
  /** From `x-sim-video-ms`, else the `videoGenerationMs` option. */
  generationMs: number;
  /** A `video-fail` fault hit this request (header or registered fault). */
  forceFail: boolean;
  /** The `videoFailureRate` option. */
  failureRate: number;
}
