import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import type { ApiKeyPrincipal } from '../../../domain/keys/key-auth';
import type { NamedEventSink } from '../../../domain/relay/caller';
import { responsesStreamEndpoint } from '../../../domain/relay/endpoints/responses';
import type { GatewayDeps } from '../../deps';
import { formatError } from '../../../schemas/error-families';
import { toWireError } from '../../../schemas/wire-error';
import { apiKeyFrom } from '../../plugins/auth';
import { admitKey } from '../../../domain/limits/key-admission';
import { parseBody } from '../../parse-body';
import { newRequestId } from '../../plugins/request-id';
import { responsesBody } from '../../../schemas/openai-responses';
import { DEFAULT_JSON_LIMITS, jsonShapeProblem, type JsonShapeLimits } from '../../../domain/json-shape';

/** A connection with no message for this long is closed (a client between turns reconnects when it needs to). */
export const WEBSOCKET_IDLE_MS = 15 * 60_000;
/** No connection lives longer (OpenAI's own limit): the client is told `websocket_connection_limit_reached` and reconnects. */
export const WEBSOCKET_LIFETIME_MS = 60 * 60_000;
/** Above this many bytes queued on the socket, a stream waits for them to be written before its next event. */
const BACKPRESSURE_BYTES = 1024 * 1024;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const asItems = (input: unknown): unknown[] => (Array.isArray(input) ? input : typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : []);

/** Messages waiting behind the response being run; past this a message is refused, not queued. */
export const MAX_QUEUED_MESSAGES = 16;

/** What one message may be: a request body's shape, and an expanded input no larger than a request body. */
export interface SocketBounds {
  jsonLimits: JsonShapeLimits;
  maxInputBytes: number;
}

/** The last response of a connection: what a `previous_response_id` on the same socket continues. */
interface Turn {
  id: string;
  input: unknown[];
  output: unknown[];
}

/**
 * The Responses API over a WebSocket, as OpenAI serves it and Codex speaks it: each `response.create` message (a
 * Responses request, `type` beside its fields) runs one response through the relay engine exactly as
 * `POST /v1/responses` with `stream: true` (any channel, native or translated, key rules, limits and billing per
 * response, one ledger row each); its events go back as text frames in the SSE order. Responses on one connection
 * run one after another. `previous_response_id` naming the connection's last response continues it with only the
 * new input items (the gateway keeps that turn, `store: false` or not); any other is `previous_response_not_found`,
 * and the client sends the whole input again. `generate: false` (a warm-up) answers at once, unbilled. Every refusal
 * is an `error` frame `{type: 'error', status, error: {...}}`, never a dropped connection.
 */
export function serveResponsesSocket(socket: WebSocket, request: FastifyRequest, deps: GatewayDeps, bounds: SocketBounds = { jsonLimits: DEFAULT_JSON_LIMITS, maxInputBytes: 10 * 1024 * 1024 }): void {
  const credential = apiKeyFrom(request);
  const log: FastifyBaseLogger = request.log;
  const closed = new AbortController();
  let last: Turn | null = null;
  let queue = Promise.resolve();
  let idle = setTimeout(() => socket.close(1000, 'idle'), WEBSOCKET_IDLE_MS);
  const lifetime = setTimeout(() => {
    sendError(socket, 400, { code: 'websocket_connection_limit_reached', message: 'This connection reached its lifetime (60 minutes): open a new one' });
    socket.close(1000, 'lifetime');
  }, WEBSOCKET_LIFETIME_MS);
  let responses = 0;
  log.info('responses websocket opened');
  socket.on('close', (code: number) => {
    log.info({ code, responses }, 'responses websocket closed');
    clearTimeout(idle);
    clearTimeout(lifetime);
    closed.abort();
  });
  socket.on('error', (err) => log.warn({ err: err.message }, 'responses websocket error'));
  let queued = 0;
  socket.on('message', (data: RawData, isBinary: boolean) => {
    clearTimeout(idle);
    idle = setTimeout(() => socket.close(1000, 'idle'), WEBSOCKET_IDLE_MS);
    // The running response is counted too: it waits in the same queue until it ends.
    if (queued > MAX_QUEUED_MESSAGES) {
      return sendError(socket, 400, { code: 'too_many_messages', message: `At most ${MAX_QUEUED_MESSAGES} messages may wait behind the running response: wait for its end` });
    }
    queued++;
    queue = queue.then(() => handle(data, isBinary)).finally(() => queued--).catch((err: unknown) => {
      log.error({ err: err instanceof Error ? err.message : String(err) }, 'responses websocket message failed');
      sendError(socket, 500, { code: 'internal_error', message: 'The response could not be run' });
    });
  });

  async function handle(data: RawData, isBinary: boolean): Promise<void> {
    if (closed.signal.aborted) return;
    if (isBinary) return sendError(socket, 400, { code: 'invalid_request', message: 'Messages must be text frames of JSON' });
    const text = data.toString();
    const shape = jsonShapeProblem(text, bounds.jsonLimits);
    if (shape) {
      const message = shape.kind === 'depth' ? `The message nests arrays and objects more than ${shape.limit} levels deep` : `An array in the message has more than ${shape.limit} elements`;
      return sendError(socket, 400, { code: 'invalid_request', message });
    }
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return sendError(socket, 400, { code: 'invalid_json', message: 'The message is not valid JSON' });
    }
    if (!isObj(msg)) return sendError(socket, 400, { code: 'invalid_request', message: 'The message must be a JSON object with a type' });
    // Acknowledgements some clients send after a response: nothing to do.
    if (msg.type === 'response.processed') return;
    if (msg.type !== 'response.create') return sendError(socket, 400, { code: 'invalid_request', message: `type: must be response.create`, param: 'type' });
    const { type: _type, generate, ...fields } = msg;

    let key: ApiKeyPrincipal;
    try {
      key = await deps.keyAuth.authenticate(credential);
    } catch (err) {
      sendWireError(socket, err);
      socket.close(1008, 'key no longer valid');
      return;
    }

    let input = asItems(fields.input);
    if (typeof fields.previous_response_id === 'string') {
      if (!last || last.id !== fields.previous_response_id) {
        return sendError(socket, 400, { code: 'previous_response_not_found', message: `Previous response ${fields.previous_response_id} is not on this connection: send the whole input`, param: 'previous_response_id' });
      }
      input = [...last.input, ...last.output, ...input];
      delete fields.previous_response_id;
      // A conversation continued on one socket grows with every turn: no larger than one request body may be.
      if (Buffer.byteLength(JSON.stringify(input)) > bounds.maxInputBytes) {
        return sendError(socket, 400, { code: 'context_too_large', message: 'The conversation on this connection is larger than a request may be: start a new one', param: 'previous_response_id' });
      }
    }
    if (generate === false) return warmUp(fields, input);

    let body;
    try {
      body = parseBody(responsesBody, { ...fields, input, stream: true });
    } catch (err) {
      return sendWireError(socket, err);
    }
    responses++;
    await respond(key, body, input);
  }

  /** A warm-up: the connection and the turn are ready; no upstream call, nothing billed. */
  function warmUp(fields: Obj, input: unknown[]): void {
    const id = `resp_${randomBytes(12).toString('hex')}`;
    const response = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), status: 'in_progress', model: fields.model, output: [] };
    send(socket, { type: 'response.created', sequence_number: 0, response });
    send(socket, { type: 'response.completed', sequence_number: 1, response: { ...response, status: 'completed', usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } } });
    last = { id, input, output: [] };
  }

  async function respond(key: ApiKeyPrincipal, body: typeof responsesBody._output, input: unknown[]): Promise<void> {
    let admitted;
    try {
      admitted = await admitKey(deps, key);
    } catch (err) {
      return sendWireError(socket, err);
    }
    const { admission, period } = admitted;
    let completed: Obj | null = null;
    const sink: NamedEventSink = {
      start() {},
      send(event, data) {
        if (event === 'response.completed') {
          const parsed: unknown = JSON.parse(data);
          if (isObj(parsed) && isObj(parsed.response)) completed = parsed.response;
        }
        return write(socket, data);
      },
      end() {},
    };
    try {
      await deps.engine.stream(responsesStreamEndpoint, body, {
        key,
        requestId: newRequestId(),
        // A client gone mid-response is not billed: the engine sees the abort.
        signal: closed.signal,
        log,
        onBilledTokens: admission.billedTokens,
        period,
        timing: {},
        droppedTools: new Set(),
      }, sink);
    } catch (err) {
      sendWireError(socket, err);
    } finally {
      admission.release();
    }
    const done = completed as Obj | null;
    if (done && typeof done.id === 'string') last = { id: done.id, input, output: Array.isArray(done.output) ? done.output : [] };
  }
}

function send(socket: WebSocket, event: Obj): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(event));
}

/** One event; when the socket's queue is long, waits until it is written (false when the client is gone). */
function write(socket: WebSocket, data: string): boolean | Promise<boolean> {
  if (socket.readyState !== socket.OPEN) return false;
  if (socket.bufferedAmount < BACKPRESSURE_BYTES) {
    socket.send(data);
    return true;
  }
  return new Promise((resolve) => socket.send(data, (err) => resolve(!err && socket.readyState === socket.OPEN)));
}

/** An `error` frame: the HTTP status the same refusal would have, and the OpenAI error body. */
function sendError(socket: WebSocket, status: number, e: { code: string; message: string; param?: string | null }): void {
  send(socket, { type: 'error', status, ...(formatError('openai', { status, code: e.code, message: e.message, param: e.param ?? null }) as Obj) });
}

function sendWireError(socket: WebSocket, err: unknown): void {
  const wire = toWireError(err);
  send(socket, { type: 'error', status: wire.status, ...(formatError('openai', wire) as Obj) });
}
