import type { IncomingHttpHeaders } from 'node:http';
import { countMessageTokens, messages } from './anthropic';
import * as batchApi from './batches';
import { geminiAction } from './gemini';
import { anthropicError, apiError, openaiError } from './errors';
import { anthropicModel, anthropicModels, openaiModel, openaiModels } from './models';
import { chatCompletions } from './openai-chat';
import { responses, responsesInputTokens } from './openai-responses';
import { embeddings } from './openai-embeddings';
import { imageEdits, imageGenerations } from './openai-images';
import { speech } from './openai-audio-speech';
import { audioTranscriptions, audioTranslations } from './openai-audio-transcriptions';
import { moderations } from './openai-moderations';
import { cohereRerank, jinaRerank } from './rerank';
import { TINY_PNG } from './png';
import { json, raw } from './reply';
import type { Api, HandlerContext, Reply } from './types';
import { videoAContent, videoACreate, videoADelete, videoAStatus } from './video-a';
import { videoBCancel, videoBPoll, videoBSubmit } from './video-b';
import { videoCCancel, videoCStatus, videoCSubmit } from './video-c';
import { videoFile } from './video-store';
import { OPENAI_VIDEO_PREFIX, openaiVideoContent, openaiVideoCreate, openaiVideoDelete, openaiVideoStatus } from './video-openai';

export interface Route {
  api: Api;
  /** Whether the API key (when configured) is checked. */
  auth: boolean;
  handle(ctx: HandlerContext): Reply;
  /** A video submission: the only requests a `video-fail` fault applies to. */
  videoSubmit?: boolean;
}

const route = (api: Api, handle: (ctx: HandlerContext) => Reply, auth = true): Route => ({ api, auth, handle });

/** The video submission paths (families A, B, C). */
export const VIDEO_SUBMIT_PATHS = {
  A: '/v1/videos',
  B: '/vendorA/api/v1/services/aigc/video-generation/video-synthesis',
  C: '/vendorB/v1/api/video/submit',
} as const;
const videoSubmit = (api: Api, handle: (ctx: HandlerContext) => Reply): Route => ({ api, auth: true, handle, videoSubmit: true });

/** The one path segment after `prefix` (and before `suffix`), decoded; undefined when the path is not of that form. */
function param(path: string, prefix: string, suffix = ''): string | undefined {
  if (!path.startsWith(prefix) || !path.endsWith(suffix) || path.length <= prefix.length + suffix.length) return undefined;
  const segment = path.slice(prefix.length, path.length - suffix.length);
  if (segment.includes('/')) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The providers' batch APIs (files, OpenAI batches, Anthropic message batches), or undefined. */
function batchRoute(method: string, path: string): Route | undefined {
  let id: string | undefined;
  if (method === 'POST') {
    if (path === '/v1/files') return route('openai', (c) => batchApi.uploadFile(c, c.batches));
    if (path === '/v1/batches') return route('openai', (c) => batchApi.createOpenAiBatch(c, c.batches));
    if (path === '/v1/messages/batches') return route('anthropic', (c) => batchApi.createMessageBatch(c, c.batches));
    if ((id = param(path, '/v1/batches/', '/cancel')) !== undefined) { const v = id; return route('openai', (c) => batchApi.cancelOpenAiBatch(c, c.batches, v)); }
    if ((id = param(path, '/v1/messages/batches/', '/cancel')) !== undefined) { const v = id; return route('anthropic', (c) => batchApi.cancelMessageBatch(c, c.batches, v)); }
  } else if (method === 'GET') {
    if (path === '/v1/batches') return route('openai', (c) => batchApi.listOpenAiBatches(c, c.batches));
    if (path === '/v1/messages/batches') return route('anthropic', (c) => batchApi.listMessageBatches(c, c.batches));
    if ((id = param(path, '/v1/files/', '/content')) !== undefined) { const v = id; return route('openai', (c) => batchApi.fileContent(v, c.batches)); }
    if ((id = param(path, '/v1/batches/')) !== undefined) { const v = id; return route('openai', (c) => batchApi.getOpenAiBatch(c, c.batches, v)); }
    if ((id = param(path, '/v1/messages/batches/', '/results')) !== undefined) { const v = id; return route('anthropic', (c) => batchApi.messageBatchResults(c, c.batches, v)); }
    if ((id = param(path, '/v1/messages/batches/')) !== undefined) { const v = id; return route('anthropic', (c) => batchApi.getMessageBatch(c, c.batches, v)); }
  }
  return undefined;
}

/** Video routes with an id in the path, or undefined. */
function videoRoute(method: string, path: string): Route | undefined {
  let id: string | undefined;
  if (method === 'GET' || method === 'HEAD') {
    if ((id = param(path, '/files/video/', '.mp4')) !== undefined) { const v = id; return route('video-a', (c) => videoFile(c, v), false); }
  }
  if (method === 'GET') {
    if ((id = param(path, `${OPENAI_VIDEO_PREFIX}/`, '/content')) !== undefined) { const v = id; return route('video-a', (c) => openaiVideoContent(c, v)); }
    if ((id = param(path, `${OPENAI_VIDEO_PREFIX}/`)) !== undefined) { const v = id; return route('video-a', (c) => openaiVideoStatus(c, v)); }
    if ((id = param(path, '/v1/videos/', '/content')) !== undefined) { const v = id; return route('video-a', (c) => videoAContent(c, v)); }
    if ((id = param(path, '/v1/videos/')) !== undefined) { const v = id; return route('video-a', (c) => videoAStatus(c, v)); }
    if ((id = param(path, '/v1/tasks/')) !== undefined) { const v = id; return route('video-b', (c) => videoBPoll(c, v)); }
    if ((id = param(path, '/vendorB/v1/api/video/status/')) !== undefined) { const v = id; return route('video-c', (c) => videoCStatus(c, v)); }
  } else if (method === 'DELETE') {
    if ((id = param(path, `${OPENAI_VIDEO_PREFIX}/`)) !== undefined) { const v = id; return route('video-a', (c) => openaiVideoDelete(c, v)); }
    if ((id = param(path, '/v1/videos/')) !== undefined) { const v = id; return route('video-a', (c) => videoADelete(c, v)); }
  } else if (method === 'POST') {
    if ((id = param(path, '/v1/tasks/', '/cancel')) !== undefined) { const v = id; return route('video-b', (c) => videoBCancel(c, v)); }
    if ((id = param(path, '/vendorB/v1/api/video/cancel/')) !== undefined) { const v = id; return route('video-c', (c) => videoCCancel(c, v)); }
  }
  return undefined;
}

/** The wire format of a path no route matched (for its 404/405). */
function guessApi(path: string, headers: IncomingHttpHeaders): Api {
  if (headers['anthropic-version'] !== undefined || path.startsWith('/v1/messages')) return 'anthropic';
  if (path.startsWith('/vendorA/') || path.startsWith('/v1/tasks')) return 'video-b';
  if (path.startsWith('/vendorB/')) return 'video-c';
  if (path.startsWith('/v1/videos') || path.startsWith('/files/video/') || path.startsWith(OPENAI_VIDEO_PREFIX)) return 'video-a';
  if (path.startsWith('/v2/')) return 'cohere';
  if (path.startsWith('/v1beta/') || headers['x-goog-api-key'] !== undefined) return 'gemini';
  return 'openai';
}

const POST: Record<string, Route> = {
  '/v1/chat/completions': route('openai', chatCompletions),
  '/v1/responses': route('openai', responses),
  '/v1/responses/input_tokens': route('openai', responsesInputTokens),
  '/v1/embeddings': route('openai', embeddings),
  '/v1/images/generations': route('openai', imageGenerations),
  '/v1/images/edits': route('openai', imageEdits),
  '/v1/audio/speech': route('openai', speech),
  '/v1/audio/transcriptions': route('openai', audioTranscriptions),
  '/v1/audio/translations': route('openai', audioTranslations),
  '/v1/moderations': route('openai', moderations),
  '/v1/rerank': route('openai', jinaRerank),
  '/v2/rerank': route('cohere', cohereRerank),
  '/v1/messages': route('anthropic', messages),
  '/v1/messages/count_tokens': route('anthropic', countMessageTokens),
  [VIDEO_SUBMIT_PATHS.A]: videoSubmit('video-a', videoACreate),
  [VIDEO_SUBMIT_PATHS.B]: videoSubmit('video-b', videoBSubmit),
  [VIDEO_SUBMIT_PATHS.C]: videoSubmit('video-c', videoCSubmit),
  [OPENAI_VIDEO_PREFIX]: videoSubmit('video-a', openaiVideoCreate),
};

const OPENAI_MODELS = route('openai', openaiModels);
const ANTHROPIC_MODELS = route('anthropic', anthropicModels);
const HEALTH = route('openai', () => json(200, { status: 'ok' }), false);
const IMAGE_FILE = route('openai', () => raw(200, 'image/png', TINY_PNG), false);

/** `/v1beta/models/{model}:{action}` or `/v1/models/{model}:{action}`: the Gemini API. */
function geminiRoute(path: string): Route | undefined {
  const prefix = path.startsWith('/v1beta/models/') ? '/v1beta/models/' : path.startsWith('/v1/models/') ? '/v1/models/' : undefined;
  const colon = path.lastIndexOf(':');
  if (!prefix || colon <= prefix.length) return undefined;
  let model: string;
  try {
    model = decodeURIComponent(path.slice(prefix.length, colon));
  } catch {
    return undefined;
  }
  return route('gemini', geminiAction(model, path.slice(colon + 1)));
}

/** A GET /v1/models request speaks Anthropic when it carries `anthropic-version` and no bearer token. */
function isAnthropicGet(headers: IncomingHttpHeaders): boolean {
  return headers['anthropic-version'] !== undefined && headers.authorization === undefined;
}

/**
 * The route for a request. Besides the API routes: GET /health, GET /files/<name>.png (the image that
 * generated URLs point at) and GET /files/video/<id>.mp4 (finished videos), without auth. Unknown paths
 * get 404 in the format the request looks like it speaks.
 */
export function resolveRoute(method: string | undefined, path: string, headers: IncomingHttpHeaders): Route {
  if (method === 'POST') {
    const r = POST[path] ?? geminiRoute(path);
    if (r) return r;
  } else if (method === 'GET') {
    if (path === '/v1/models') return isAnthropicGet(headers) ? ANTHROPIC_MODELS : OPENAI_MODELS;
    if (path.startsWith('/v1/models/')) {
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      return isAnthropicGet(headers) ? route('anthropic', () => anthropicModel(id)) : route('openai', () => openaiModel(id));
    }
    if (path === '/health') return HEALTH;
    if (path.startsWith('/files/') && path.endsWith('.png')) return IMAGE_FILE;
  }
  const video = videoRoute(method ?? '', path) ?? batchRoute(method ?? '', path);
  if (video) return video;
  const api = guessApi(path, headers);
  const known = POST[path] !== undefined;
  return route(api, () => apiError(api, known ? 405 : 404, { message: known ? `Method ${method} not allowed on ${path}.` : `Unknown request URL: ${method} ${path}.`, code: known ? 'method_not_allowed' : 'unknown_url' }), false);
}

/** The 401 for a request without the right key, or undefined when it may pass. */
export function checkAuth(api: Api, headers: IncomingHttpHeaders, apiKey: string | undefined, bearer: string | undefined, requestId?: string): Reply | undefined {
  if (apiKey === undefined) return undefined;
  if (api === 'gemini') {
    const key = headers['x-goog-api-key'];
    if (key === apiKey) return undefined;
    return apiError('gemini', key === undefined ? 403 : 400, { message: key === undefined ? 'Method doesn\'t allow unregistered callers. Please use API Key.' : 'API key not valid. Please pass a valid API key.' });
  }
  if (api === 'anthropic') {
    const key = headers['x-api-key'];
    if (key === apiKey) return undefined;
    return anthropicError(401, { message: key === undefined ? 'x-api-key header is required' : 'invalid x-api-key' });
  }
  const auth = headers.authorization;
  if (auth === bearer) return undefined;
  // Family A documents the raw key form; our own front door takes both there.
  if (api === 'video-a' && auth === apiKey) return undefined;
  if (api !== 'openai') {
    return apiError(api, 401, { message: auth === undefined ? 'Authorization: Bearer <API_KEY> is required.' : 'Invalid API key.', code: api === 'video-a' ? 'invalid_api_key' : undefined, requestId });
  }
  return openaiError(401, {
    message: auth === undefined
      ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
      : 'Incorrect API key provided.',
    code: 'invalid_api_key',
  });
}

/** Anthropic routes need `anthropic-version`: 400 without it, as the real API does. */
export function checkAnthropicVersion(headers: IncomingHttpHeaders): Reply | undefined {
  return headers['anthropic-version'] === undefined ? anthropicError(400, { message: 'anthropic-version: header is required' }) : undefined;
}
