import type { Reply } from './types';

const JSON_TYPE = 'application/json';
const SSE_TYPE = 'text/event-stream; charset=utf-8';

/** A JSON body reply. */
export function json(status: number, body: unknown): Reply {
  return { status, headers: { 'content-type': JSON_TYPE }, pieces: [JSON.stringify(body)], stream: false };
}

/** A server-sent-events reply; every piece is one complete event. */
export function sse(pieces: string[]): Reply {
  return { status: 200, headers: { 'content-type': SSE_TYPE, 'cache-control': 'no-cache' }, pieces, stream: true };
}

/** A raw body (e.g. a PNG). */
export function raw(status: number, contentType: string, body: string | Buffer): Reply {
  return { status, headers: { 'content-type': contentType }, pieces: [body], stream: false };
}

/** One OpenAI-style SSE event: `data: <json>\n\n`. */
export function dataEvent(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

/** One Anthropic-style SSE event: `event: <type>\ndata: <json>\n\n`. */
export function namedEvent(type: string, value: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(value)}\n\n`;
}

export const DONE_EVENT = 'data: [DONE]\n\n';
