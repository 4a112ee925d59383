import { StringDecoder } from 'node:string_decoder';

/** One server-sent event: its `event:` name (if any) and its data lines joined with '\n'. */
export interface SseEvent {
  event?: string;
  data: string;
}

/**
 * Server-sent events from a byte stream, yielded as soon as each event's blank line arrives (no buffering
 * beyond one event). Handles LF and CRLF, multi-byte characters split across chunks, comments (`:`), and a
 * last event without its blank line.
 */
export async function* parseSse(chunks: AsyncIterable<Buffer>): AsyncGenerator<SseEvent> {
  const decoder = new StringDecoder('utf8');
  let buffer = '';
  let data: string[] = [];
  let event: string | undefined;
  const line = (raw: string): SseEvent | undefined => {
    const l = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (l === '') {
      if (data.length === 0 && event === undefined) return undefined;
      const out: SseEvent = { data: data.join('\n') };
      if (event !== undefined) out.event = event;
      data = [];
      event = undefined;
      return out;
    }
    if (l.charCodeAt(0) === 58 /* : */) return undefined;
    const colon = l.indexOf(':');
    const field = colon === -1 ? l : l.slice(0, colon);
    let value = colon === -1 ? '' : l.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    return undefined;
  };
  for await (const chunk of chunks) {
    buffer += decoder.write(chunk);
    let start = 0;
    let nl: number;
    while ((nl = buffer.indexOf('\n', start)) !== -1) {
      const ev = line(buffer.slice(start, nl));
      start = nl + 1;
      if (ev) yield ev;
    }
    buffer = start === 0 ? buffer : buffer.slice(start);
  }
  buffer += decoder.end();
  if (buffer) {
    const ev = line(buffer);
    if (ev) yield ev;
  }
  const last = line('');
  if (last) yield last;
}
