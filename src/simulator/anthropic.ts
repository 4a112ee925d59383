import { planAnswer, type Answer, type ToolMode, type ToolSpec } from './answers';
import { anthropicError } from './errors';
import { json, namedEvent, sse } from './reply';
import { countJsonTokens, countTokens, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, PROMPT_OVERHEAD_TOKENS, splitTokens } from './tokens';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject, type Problem } from './validate';

/**
 * POST /v1/messages: the Anthropic Messages API, plain or streamed with the real event sequence
 * (message_start, content_block_start, ping, content_block_delta ×N, content_block_stop,
 * message_delta, message_stop). The `anthropic-version` header is checked by the server.
 */
export function messages(ctx: HandlerContext): Reply {
  const body = ctx.body;
  if (!isObject(body)) return anthropicError(400, { message: 'The request body must be a JSON object.' });
  const problem = validate(body, true, ctx.strictModels);
  if (problem) return anthropicError(problem.status ?? 400, problem);

  const msgs = body.messages as Array<Record<string, unknown>>;
  const tools = toolSpecs(body.tools);
  const last = lastTurn(msgs);
  const answer = planAnswer({
    lastText: last.text,
    afterToolResult: last.afterToolResult,
    images: last.images,
    tools,
    toolMode: toolMode(body.tool_choice),
    maxTokens: body.max_tokens as number,
    stop: Array.isArray(body.stop_sequences) ? body.stop_sequences.filter((s): s is string => typeof s === 'string') : undefined,
    jsonSchema: schemaAskedFor(contentOf(body.system).text),
  });
  const inputTokens = inputTokenCount(body);
  const id = ctx.id('msg_');
  const model = body.model as string;
  const stopReason = answer.kind === 'tool' ? 'tool_use' : answer.finish === 'length' ? 'max_tokens' : answer.finish === 'stop_sequence' ? 'stop_sequence' : 'end_turn';
  const stopSequence = answer.kind === 'text' ? answer.stopSequence : null;

  if (body.stream === true) return sse(streamEvents(ctx, id, model, answer, inputTokens, stopReason, stopSequence));
  const content = answer.kind === 'text' ? [{ type: 'text', text: answer.text }] : [{ type: 'tool_use', id: ctx.id('toolu_'), name: answer.name, input: answer.args }];
  return json(200, {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    usage: usage(inputTokens, answer.tokens),
  });
}

/** POST /v1/messages/count_tokens: `{input_tokens}` as the simulator counts them for /v1/messages. */
export function countMessageTokens(ctx: HandlerContext): Reply {
  const body = ctx.body;
  if (!isObject(body)) return anthropicError(400, { message: 'The request body must be a JSON object.' });
  const problem = validate(body, false, ctx.strictModels);
  if (problem) return anthropicError(problem.status ?? 400, problem);
  return json(200, { input_tokens: inputTokenCount(body) });
}

function usage(input: number, output: number) {
  return { input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

function validate(body: Record<string, unknown>, needMaxTokens: boolean, strict: boolean): Problem | undefined {
  if (typeof body.model !== 'string' || !body.model) return { message: 'model: Field required' };
  if (needMaxTokens && !(Number.isInteger(body.max_tokens) && (body.max_tokens as number) >= 1)) {
    return { message: body.max_tokens === undefined ? 'max_tokens: Field required' : 'max_tokens: Input should be a valid integer greater than or equal to 1' };
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) return { message: body.messages === undefined ? 'messages: Field required' : 'messages: at least one message is required' };
  for (let i = 0; i < body.messages.length; i++) {
    const m: unknown = body.messages[i];
    // Any role string passes: the API has grown roles beyond user/assistant (`system` inside messages) and may again.
    if (!isObject(m) || typeof m.role !== 'string') return { message: `messages.${i}.role: Field required` };
    if (typeof m.content !== 'string' && !Array.isArray(m.content)) return { message: `messages.${i}.content: Field required` };
  }
  if (body.tools !== undefined && (!Array.isArray(body.tools) || body.tools.some((t) => !isObject(t) || typeof t.name !== 'string'))) {
    return { message: 'tools: Input should be a valid list of tools with a name' };
  }
  const p = checkModel(body.model, 'chat', strict);
  return p ? { status: p.status, message: p.status === 404 ? `model: ${body.model}` : p.message } : undefined;
}

function toolSpecs(tools: unknown): ToolSpec[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((t: { name: string; description?: string; input_schema?: unknown }) => ({ name: t.name, description: t.description, schema: t.input_schema }));
}

function toolMode(choice: unknown): ToolMode {
  if (!isObject(choice)) return { mode: 'auto' };
  if (choice.type === 'none') return { mode: 'none' };
  if (choice.type === 'any') return { mode: 'required' };
  if (choice.type === 'tool' && typeof choice.name === 'string') return { mode: 'named', name: choice.name };
  return { mode: 'auto' };
}

interface Content {
  text: string;
  images: number;
  toolResults: number;
  /** Tokens of tool_use inputs. */
  jsonTokens: number;
}

/** Text (tool results included), image count and tool-use input tokens of a message's content. */
function contentOf(content: unknown): Content {
  const c: Content = { text: '', images: 0, toolResults: 0, jsonTokens: 0 };
  if (typeof content === 'string') { c.text = content; return c; }
  if (!Array.isArray(content)) return c;
  const add = (t: string) => { c.text += (c.text ? '\n' : '') + t; };
  for (const block of content) {
    if (!isObject(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') add(block.text);
    else if (block.type === 'image') c.images++;
    else if (block.type === 'tool_use') c.jsonTokens += countJsonTokens(block.input);
    else if (block.type === 'tool_result') {
      c.toolResults++;
      const inner = contentOf(block.content);
      if (inner.text) add(inner.text);
      c.images += inner.images;
    }
  }
  return c;
}

function lastTurn(msgs: Array<Record<string, unknown>>): { text: string; afterToolResult: boolean; images: number } {
  for (let i = msgs.length - 1; i >= 0; i--) {
    if (msgs[i].role !== 'user') continue;
    const c = contentOf(msgs[i].content);
    return { text: c.text, images: c.images, afterToolResult: i === msgs.length - 1 && c.toolResults > 0 };
  }
  return { text: '', images: 0, afterToolResult: false };
}

/** 3 + the system text + per message 3 + its tokens (85 per image) + the tools as JSON. */
function inputTokenCount(body: Record<string, unknown>): number {
  let n = PROMPT_OVERHEAD_TOKENS + countTokens(contentOf(body.system).text);
  for (const m of body.messages as Array<Record<string, unknown>>) {
    const c = contentOf(m.content);
    n += MESSAGE_OVERHEAD_TOKENS + countTokens(c.text) + c.images * IMAGE_TOKENS + c.jsonTokens;
  }
  if (Array.isArray(body.tools) && body.tools.length) n += countJsonTokens(body.tools);
  return n;
}

function streamEvents(ctx: HandlerContext, id: string, model: string, a: Answer, inputTokens: number, stopReason: string, stopSequence: string | null): string[] {
  const out: string[] = [];
  out.push(namedEvent('message_start', {
    type: 'message_start',
    message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usage(inputTokens, 1) },
  }));
  const block = a.kind === 'text' ? { type: 'text', text: '' } : { type: 'tool_use', id: ctx.id('toolu_'), name: a.name, input: {} };
  out.push(namedEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: block }));
  out.push(namedEvent('ping', { type: 'ping' }));
  for (const piece of splitTokens(a.kind === 'text' ? a.text : a.argsJson, ctx.streamChunks)) {
    const delta = a.kind === 'text' ? { type: 'text_delta', text: piece } : { type: 'input_json_delta', partial_json: piece };
    out.push(namedEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta }));
  }
  out.push(namedEvent('content_block_stop', { type: 'content_block_stop', index: 0 }));
  out.push(namedEvent('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: stopSequence }, usage: { output_tokens: a.tokens } }));
  out.push(namedEvent('message_stop', { type: 'message_stop' }));
  return out;
}

/**
 * A system prompt that ends by asking for JSON matching a schema (`... JSON Schema ...:` and the schema on the lines
 * after it, as a model would be told) gets JSON built from that schema, as a model that follows it would answer.
 */
function schemaAskedFor(system: string): unknown {
  const m = /JSON Schema[^\n]*:\n(\{[\s\S]*\})\s*$/.exec(system);
  if (!m) return undefined;
  try {
    return JSON.parse(m[1]);
  } catch {
    return undefined;
  }
}
