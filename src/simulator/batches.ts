import { messages } from './anthropic';
import { anthropicError, openaiError } from './errors';
import type { Form } from './multipart';
import { chatCompletions } from './openai-chat';
import { embeddings } from './openai-embeddings';
import { responses } from './openai-responses';
import { json, raw } from './reply';
import type { HandlerContext, Reply } from './types';

/**
 * The providers' batch APIs, as far as the gateway uses them: OpenAI's Files (`purpose: batch`) and Batch API, and
 * Anthropic's Message Batches. A batch ends `batchMs` after its creation (read when polled): each line is answered
 * by the simulator's own handler for its endpoint, so answers and usage are those of single calls.
 */

interface SimFile {
  id: string;
  bytes: Buffer;
  filename: string;
  purpose: string;
  created_at: number;
}

interface OpenAiBatch {
  id: string;
  endpoint: string;
  input_file_id: string;
  metadata: Record<string, string> | null;
  status: string;
  created_at: number;
  due: number;
  output_file_id: string | null;
  error_file_id: string | null;
  request_counts: { total: number; completed: number; failed: number };
}

interface MessageBatch {
  id: string;
  created: number;
  due: number;
  requests: Array<{ custom_id: string; params: unknown }>;
  ended: boolean;
  canceled: boolean;
  results: string | null;
  counts: { processing: number; succeeded: number; errored: number; canceled: number; expired: number };
}

export class BatchStore {
  readonly files = new Map<string, SimFile>();
  readonly openai = new Map<string, OpenAiBatch>();
  readonly anthropic = new Map<string, MessageBatch>();
  /** Time from a batch's creation to its end (the `batchMs` option). */
  batchMs = 200;
}

const now = () => Math.floor(Date.now() / 1000);
const fileView = (f: SimFile) => ({ id: f.id, object: 'file', bytes: f.bytes.length, created_at: f.created_at, filename: f.filename, purpose: f.purpose, status: 'processed' });

const HANDLERS: Record<string, (ctx: HandlerContext) => Reply> = {
  '/v1/chat/completions': chatCompletions,
  '/v1/embeddings': embeddings,
  '/v1/responses': responses,
};

/** One line answered by the handler of its endpoint: its status and JSON body. */
function answer(ctx: HandlerContext, handler: (ctx: HandlerContext) => Reply, body: unknown): { status: number; body: unknown } {
  const reply = handler({ ...ctx, body });
  const text = reply.pieces.map((p) => p.toString()).join('');
  return { status: reply.status, body: JSON.parse(text) };
}

export function uploadFile(ctx: HandlerContext, store: BatchStore): Reply {
  const form = ctx.body as Form | undefined;
  const file = form?.files?.find((f) => f.name === 'file');
  if (!file || form?.fields.purpose === undefined) return openaiError(400, { message: 'file and purpose are required', code: 'invalid_request' });
  const f: SimFile = { id: ctx.id('file-'), bytes: file.data, filename: file.filename, purpose: form.fields.purpose, created_at: now() };
  store.files.set(f.id, f);
  return json(200, fileView(f));
}

export function fileContent(id: string, store: BatchStore): Reply {
  const f = store.files.get(id);
  return f ? raw(200, 'application/jsonl', f.bytes) : openaiError(404, { message: `No such File object: ${id}`, code: 'not_found' });
}

/** Ends a batch that is due: every line answered, output and error files written. */
function settleOpenAi(ctx: HandlerContext, store: BatchStore, b: OpenAiBatch): void {
  if (b.status !== 'in_progress' || Date.now() < b.due) return;
  const handler = HANDLERS[b.endpoint];
  const input = store.files.get(b.input_file_id)!.bytes.toString('utf8').split('\n').filter((l) => l.trim());
  const out: string[] = [];
  const errs: string[] = [];
  for (const line of input) {
    const { custom_id, body } = JSON.parse(line) as { custom_id: string; body: unknown };
    const r = answer(ctx, handler, body);
    const entry = JSON.stringify({ id: ctx.id('batch_req_'), custom_id, response: { status_code: r.status, request_id: ctx.id('req_'), body: r.body }, error: null });
    (r.status === 200 ? out : errs).push(entry);
  }
  const file = (lines: string[], kind: string): string | null => {
    if (lines.length === 0) return null;
    const f: SimFile = { id: ctx.id('file-'), bytes: Buffer.from(lines.join('\n') + '\n'), filename: `${b.id}_${kind}.jsonl`, purpose: 'batch_output', created_at: now() };
    store.files.set(f.id, f);
    return f.id;
  };
  b.output_file_id = file(out, 'output');
  b.error_file_id = file(errs, 'error');
  b.request_counts = { total: input.length, completed: out.length, failed: errs.length };
  b.status = 'completed';
}

const openAiView = (b: OpenAiBatch) => ({
  id: b.id,
  object: 'batch',
  endpoint: b.endpoint,
  input_file_id: b.input_file_id,
  completion_window: '24h',
  status: b.status,
  output_file_id: b.output_file_id,
  error_file_id: b.error_file_id,
  created_at: b.created_at,
  request_counts: b.request_counts,
  metadata: b.metadata,
});

export function createOpenAiBatch(ctx: HandlerContext, store: BatchStore): Reply {
  const body = ctx.body as { input_file_id?: string; endpoint?: string; metadata?: Record<string, string> } | undefined;
  const file = body?.input_file_id ? store.files.get(body.input_file_id) : undefined;
  if (!file || !body?.endpoint || !HANDLERS[body.endpoint]) return openaiError(400, { message: 'input_file_id and a supported endpoint are required', code: 'invalid_request' });
  const total = file.bytes.toString('utf8').split('\n').filter((l) => l.trim()).length;
  const b: OpenAiBatch = {
    id: ctx.id('batch_'), endpoint: body.endpoint, input_file_id: file.id, metadata: body.metadata ?? null, status: 'in_progress', created_at: now(),
    due: Date.now() + store.batchMs, output_file_id: null, error_file_id: null, request_counts: { total, completed: 0, failed: 0 },
  };
  store.openai.set(b.id, b);
  return json(200, openAiView(b));
}

export function getOpenAiBatch(ctx: HandlerContext, store: BatchStore, id: string): Reply {
  const b = store.openai.get(id);
  if (!b) return openaiError(404, { message: `No batch found with id '${id}'.`, code: 'not_found' });
  settleOpenAi(ctx, store, b);
  return json(200, openAiView(b));
}

export function listOpenAiBatches(ctx: HandlerContext, store: BatchStore): Reply {
  const data = [...store.openai.values()].reverse().slice(0, 100);
  for (const b of data) settleOpenAi(ctx, store, b);
  return json(200, { object: 'list', data: data.map(openAiView), has_more: false });
}

export function cancelOpenAiBatch(ctx: HandlerContext, store: BatchStore, id: string): Reply {
  const b = store.openai.get(id);
  if (!b) return openaiError(404, { message: `No batch found with id '${id}'.`, code: 'not_found' });
  settleOpenAi(ctx, store, b);
  if (b.status === 'in_progress') b.status = 'cancelled';
  return json(200, openAiView(b));
}

function settleAnthropic(ctx: HandlerContext, b: MessageBatch): void {
  if (b.ended || (!b.canceled && Date.now() < b.due)) return;
  const lines: string[] = [];
  for (const r of b.requests) {
    if (b.canceled) {
      lines.push(JSON.stringify({ custom_id: r.custom_id, result: { type: 'canceled' } }));
      b.counts.canceled++;
      continue;
    }
    const a = answer(ctx, messages, r.params);
    if (a.status === 200) b.counts.succeeded++;
    else b.counts.errored++;
    lines.push(JSON.stringify({ custom_id: r.custom_id, result: a.status === 200 ? { type: 'succeeded', message: a.body } : { type: 'errored', error: a.body } }));
  }
  b.counts.processing = 0;
  b.results = lines.join('\n') + '\n';
  b.ended = true;
}

const iso = (ms: number) => new Date(ms).toISOString();

function messageBatchView(ctx: HandlerContext, b: MessageBatch) {
  return {
    id: b.id,
    type: 'message_batch',
    processing_status: b.ended ? 'ended' : b.canceled ? 'canceling' : 'in_progress',
    request_counts: b.counts,
    ended_at: b.ended ? iso(b.due) : null,
    created_at: iso(b.created),
    expires_at: iso(b.created + 86_400_000),
    archived_at: null,
    cancel_initiated_at: b.canceled ? iso(Date.now()) : null,
    results_url: b.ended ? `${ctx.baseUrl}/v1/messages/batches/${b.id}/results` : null,
  };
}

export function createMessageBatch(ctx: HandlerContext, store: BatchStore): Reply {
  const requests = (ctx.body as { requests?: MessageBatch['requests'] } | undefined)?.requests;
  if (!Array.isArray(requests) || requests.length === 0) return anthropicError(400, { type: 'invalid_request_error', message: 'requests: must be a non-empty array' });
  const b: MessageBatch = {
    id: ctx.id('msgbatch_'), created: Date.now(), due: Date.now() + store.batchMs, requests, ended: false, canceled: false, results: null,
    counts: { processing: requests.length, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
  };
  store.anthropic.set(b.id, b);
  return json(200, messageBatchView(ctx, b));
}

export function getMessageBatch(ctx: HandlerContext, store: BatchStore, id: string): Reply {
  const b = store.anthropic.get(id);
  if (!b) return anthropicError(404, { type: 'not_found_error', message: `No message batch found with id '${id}'.` });
  settleAnthropic(ctx, b);
  return json(200, messageBatchView(ctx, b));
}

export function listMessageBatches(ctx: HandlerContext, store: BatchStore): Reply {
  const data = [...store.anthropic.values()].reverse().slice(0, 100);
  for (const b of data) settleAnthropic(ctx, b);
  return json(200, { data: data.map((b) => messageBatchView(ctx, b)), has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}

export function cancelMessageBatch(ctx: HandlerContext, store: BatchStore, id: string): Reply {
  const b = store.anthropic.get(id);
  if (!b) return anthropicError(404, { type: 'not_found_error', message: `No message batch found with id '${id}'.` });
  if (!b.ended) b.canceled = true;
  settleAnthropic(ctx, b);
  return json(200, messageBatchView(ctx, b));
}

export function messageBatchResults(ctx: HandlerContext, store: BatchStore, id: string): Reply {
  const b = store.anthropic.get(id);
  if (!b) return anthropicError(404, { type: 'not_found_error', message: `No message batch found with id '${id}'.` });
  settleAnthropic(ctx, b);
  if (!b.results) return anthropicError(400, { type: 'invalid_request_error', message: 'The batch has not ended yet.' });
  return raw(200, 'application/binary', b.results);
}
