import type { RawResponse } from './raw-http';

/**
 * Whether a response is well-formed for its error family: x-request-id, no 5xx, JSON (a key download aside), and
 * an error body in the family's exact format. The family is the test's own rule from the path, independent of the
 * gateway's routing.
 */

export const REQUEST_ID = /^req_[0-9a-f]{32}$/;

/** Family expected from the path alone (the routes declare theirs; this is the test's own, independent rule). */
export function expectedFamily(target: string): 'management' | 'anthropic' | 'gemini' | 'openai' | 'video-a' | 'video-b' | 'video-c' {
  const path = target.replace(/^[a-z]+:\/\/[^/]*/i, '').split('?')[0].replace(/\/{2,}/g, '/');
  // The Gemini API: /v1beta/*, and under /v1 its model methods (`/v1/models/{model}:{method}`).
  if (path === '/v1beta' || path.startsWith('/v1beta/') || (path.startsWith('/v1/models/') && path.includes(':'))) return 'gemini';
  if (path === '/api' || path.startsWith('/api/') || path === '/console' || path.startsWith('/console/')) return 'management';
  if (path === '/v1/videos' || path.startsWith('/v1/videos/') || path.startsWith('/v1/files/video/')) return 'video-a';
  if (path.startsWith('/vendorA/') || path.startsWith('/v1/tasks/')) return 'video-b';
  if (path.startsWith('/vendorB/')) return 'video-c';
  return path === '/v1/messages' || path.startsWith('/v1/messages/') ? 'anthropic' : 'openai';
}

/** Problems with one response; empty when it is well-formed for its family. */
export function wireErrorProblems(res: RawResponse, target: string, opts: { head?: boolean } = {}): string[] {
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`status ${res.status}`);
  if (!REQUEST_ID.test(res.headers['x-request-id'] ?? '')) problems.push(`x-request-id ${JSON.stringify(res.headers['x-request-id'])}`);
  // A download answers its file when it succeeds (a batch's keys as CSV or JSONL); its errors are JSON like any other.
  const download = res.status < 300 && /\/keys\.(csv|jsonl)(\?|$)/.test(target) && /^(text\/csv|application\/x-ndjson)/.test(res.headers['content-type'] ?? '');
  if (!download && !/^application\/json/.test(res.headers['content-type'] ?? '')) problems.push(`content-type ${res.headers['content-type']}`);
  if (opts.head || download) return problems;
  let body: any;
  try {
    body = JSON.parse(res.body);
  } catch {
    return [...problems, `body is not JSON: ${res.body.slice(0, 80)}`];
  }
  if (res.status >= 400) {
    const family = expectedFamily(target);
    if (family === 'management') {
      if (!(body.success === false && typeof body.message === 'string' && Object.keys(body).length === 2)) {
        problems.push(`not a management error: ${res.body.slice(0, 120)}`);
      }
    } else if (family === 'video-a') {
      const e = body.error;
      const ok = e && typeof e.message === 'string' && typeof e.type === 'string' && typeof e.code === 'string' && Object.keys(e).length === 3;
      if (!ok) problems.push(`not a video family A error: ${res.body.slice(0, 120)}`);
    } else if (family === 'video-b') {
      if (!(typeof body.code === 'string' && typeof body.message === 'string' && REQUEST_ID.test(body.request_id))) {
        problems.push(`not a video family B error: ${res.body.slice(0, 120)}`);
      }
    } else if (family === 'video-c') {
      const ok = body.success === false && typeof body.message === 'string' && typeof body.error_code === 'string' && typeof body.details?.field === 'string';
      if (!ok) problems.push(`not a video family C error: ${res.body.slice(0, 120)}`);
    } else if (family === 'gemini') {
      const e = body.error;
      const ok = e && typeof e.code === 'number' && typeof e.message === 'string' && typeof e.status === 'string' && Object.keys(e).length === 3;
      if (!ok) problems.push(`not a Gemini error: ${res.body.slice(0, 120)}`);
    } else if (family === 'anthropic') {
      if (!(body.type === 'error' && typeof body.error?.type === 'string' && typeof body.error?.message === 'string')) {
        problems.push(`not an Anthropic error: ${res.body.slice(0, 120)}`);
      }
    } else {
      const e = body.error;
      const ok = e && typeof e.message === 'string' && typeof e.type === 'string' && typeof e.code === 'string' && 'param' in e;
      if (!ok) problems.push(`not an OpenAI error: ${res.body.slice(0, 120)}`);
    }
  }
  return problems;
}

