import type { IncomingHttpHeaders } from 'node:http';
import { countMessageTokens, messages } from './anthropic';
import { anthropicError, apiError, openaiError } from './errors';
import { anthropicModel, anthropicModels, openaiModel, openaiModels } from './models';
import { chatCompletions } from './openai-chat';
import { embeddings } from './openai-embeddings';
import { imageEdits, imageGenerations } from './openai-images';
import { TINY_PNG } from './png';
import { json, raw } from './reply';
import type { Api, HandlerContext, Reply } from './types';

export interface Route {
  api: Api;
  /** Whether the API key (when configured) is checked. */
  auth: boolean;
  handle(ctx: HandlerContext): Reply;
}

const route = (api: Api, handle: (ctx: HandlerContext) => Reply, auth = true): Route => ({ api, auth, handle });

const POST: Record<string, Route> = {
  '/v1/chat/completions': route('openai', chatCompletions),
  '/v1/embeddings': route('openai', embeddings),
  '/v1/images/generations': route('openai', imageGenerations),
  '/v1/images/edits': route('openai', imageEdits),
  '/v1/messages': route('anthropic', messages),
  '/v1/messages/count_tokens': route('anthropic', countMessageTokens),
};

const OPENAI_MODELS = route('openai', openaiModels);
const ANTHROPIC_MODELS = route('anthropic', anthropicModels);
const HEALTH = route('openai', () => json(200, { status: 'ok' }), false);
const IMAGE_FILE = route('openai', () => raw(200, 'image/png', TINY_PNG), false);

/** A GET /v1/models request speaks Anthropic when it carries `anthropic-version` and no bearer token. */
function isAnthropicGet(headers: IncomingHttpHeaders): boolean {
  return headers['anthropic-version'] !== undefined && headers.authorization === undefined;
}

/**
 * The route for a request. Besides the API routes: GET /health, and GET /files/<name>.png (the
 * image that generated URLs point at), both without auth. Unknown paths get 404 in the format the
 * request looks like it speaks.
 */
export function resolveRoute(method: string | undefined, path: string, headers: IncomingHttpHeaders): Route {
  if (method === 'POST') {
    const r = POST[path];
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
  const api: Api = headers['anthropic-version'] !== undefined || path.startsWith('/v1/messages') ? 'anthropic' : 'openai';
  const known = POST[path] !== undefined;
  return route(api, () => apiError(api, known ? 405 : 404, { message: known ? `Method ${method} not allowed on ${path}.` : `Unknown request URL: ${method} ${path}.`, code: known ? 'method_not_allowed' : 'unknown_url' }), false);
}

/** The 401 for a request without the right key, or undefined when it may pass. */
export function checkAuth(api: Api, headers: IncomingHttpHeaders, apiKey: string | undefined, bearer: string | undefined): Reply | undefined {
  if (apiKey === undefined) return undefined;
  if (api === 'anthropic') {
    const key = headers['x-api-key'];
    if (key === apiKey) return undefined;
    return anthropicError(401, { message: key === undefined ? 'x-api-key header is required' : 'invalid x-api-key' });
  }
  const auth = headers.authorization;
  if (auth === bearer) return undefined;
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
