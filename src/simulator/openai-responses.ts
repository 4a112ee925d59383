import { planAnswer, type Answer, type ToolMode, type ToolSpec } from './answers';
import { openaiError } from './errors';
import { json, namedEvent, sse } from './reply';
import { countJsonTokens, countTokens, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, PROMPT_OVERHEAD_TOKENS, splitTokens } from './tokens';
import { textAndImages } from './content';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject, optionalInt, requireString, type Problem } from './validate';

/**
 * POST /v1/responses: the OpenAI Responses API, plain or streamed as named events (response.created,
 * response.in_progress, output_item.added, the text / arguments / custom input deltas and their .done,
 * output_item.done, response.completed or response.incomplete). It answers as chat does (answers.ts): function and
 * custom tools, `tool_choice`, `max_output_tokens`; `store: false` with the whole history in `input` is the only mode
 * (the simulator keeps nothing, so `previous_response_id` is refused like an unknown response).
 */
export function responses(ctx: HandlerContext): Reply {
  const body = ctx.body;
  if (!isObject(body)) return openaiError(400, { message: 'The request body must be a JSON object.' });
  const problem = validate(body, ctx.strictModels);
  if (problem) return openaiError(problem.status ?? 400, problem);

  const items = inputItems(body.input);
  const tools = toolsOf(body.tools, items);
  const last = lastTurn(items);
  const answer = planAnswer({
    lastText: last.text,
    afterToolResult: last.afterToolResult,
    images: last.images,
    tools: tools.specs,
    toolMode: toolMode(body.tool_choice),
    maxTokens: (body.max_output_tokens ?? undefined) as number | undefined,
  });
  const inputTokens = inputTokenCount(body, items);
  const r: ResponseHead = {
    id: ctx.id('resp_'),
    created_at: Math.floor(Date.now() / 1000),
    model: body.model as string,
    echo: echoed(body),
  };
  const item = outputItem(answer, tools.custom, ctx);
  const incomplete = answer.kind === 'text' && answer.finish === 'length';
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: answer.tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + answer.tokens,
  };
  const final = responseObject(r, incomplete ? 'incomplete' : 'completed', [item.done], usage, incomplete);
  if (body.stream !== true) return json(200, final);
  return sse(streamEvents(r, item, answer, final, ctx.streamChunks));
}

function validate(body: Record<string, unknown>, strict: boolean): Problem | undefined {
  const p = requireString(body, 'model');
  if (p) return p;
  const input = body.input;
  if (input === undefined) return { message: "Missing required parameter: 'input'.", param: 'input', code: 'missing_required_parameter' };
  if (typeof input !== 'string' && !Array.isArray(input)) return { message: "Invalid 'input': expected a string or an array of input items.", param: 'input', code: 'invalid_type' };
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    return { status: 404, message: `Previous response with id '${String(body.previous_response_id)}' not found.`, param: 'previous_response_id', code: 'previous_response_not_found' };
  }
  if (body.tools !== undefined && !Array.isArray(body.tools)) return { message: "Invalid 'tools': expected an array.", param: 'tools', code: 'invalid_type' };
  return optionalInt(body, 'max_output_tokens', 16) ?? checkModel(body.model as string, 'chat', strict);
}

type Item = Record<string, unknown>;

/** The input as items: a string is one user message. */
function inputItems(input: unknown): Item[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return (input as unknown[]).filter(isObject);
}

interface Tools {
  specs: ToolSpec[];
  /** Names of the freeform (`custom`) tools: their calls carry raw input, not JSON arguments. */
  custom: Set<string>;
}

/** Function and custom tools, from `tools` (namespaces flattened) and from `additional_tools` input items. */
function toolsOf(tools: unknown, items: Item[]): Tools {
  const out: Tools = { specs: [], custom: new Set() };
  const add = (list: unknown) => {
    if (!Array.isArray(list)) return;
    for (const t of list) {
      if (!isObject(t)) continue;
      if (Array.isArray(t.tools)) add(t.tools);
      if (typeof t.name !== 'string' || (t.type !== 'function' && t.type !== 'custom')) continue;
      out.specs.push({ name: t.name, description: typeof t.description === 'string' ? t.description : undefined, schema: t.parameters });
      if (t.type === 'custom') out.custom.add(t.name);
    }
  };
  add(tools);
  for (const i of items) if (i.type === 'additional_tools') add(i.tools);
  return out;
}

function toolMode(choice: unknown): ToolMode {
  if (choice === 'none') return { mode: 'none' };
  if (choice === 'required') return { mode: 'required' };
  if (isObject(choice) && typeof choice.name === 'string') return { mode: 'named', name: choice.name };
  return { mode: 'auto' };
}

/** Text and image count of an item's content (a string, or input_text / output_text / input_image parts). */
function contentOf(content: unknown): { text: string; images: number } {
  return textAndImages(content, (part) => (typeof part.text === 'string' ? part.text : part.type === 'input_image' ? true : undefined));
}

const TOOL_OUTPUTS = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output']);

/** What the answer responds to: a trailing tool output, else the last user message. */
function lastTurn(items: Item[]): { text: string; afterToolResult: boolean; images: number } {
  const last = items[items.length - 1];
  if (last && TOOL_OUTPUTS.has(last.type as string)) return { ...contentOf(last.output), afterToolResult: true };
  for (let i = items.length - 1; i >= 0; i--) {
    const m = items[i];
    if (m.role === 'user' && (m.type === undefined || m.type === 'message')) return { ...contentOf(m.content), afterToolResult: false };
  }
  return { text: '', images: 0, afterToolResult: false };
}

/** 3 + the instructions + per item 3 + its text (85 per image, calls as JSON) + the tools as JSON. */
function inputTokenCount(body: Record<string, unknown>, items: Item[]): number {
  let n = PROMPT_OVERHEAD_TOKENS + countTokens(typeof body.instructions === 'string' ? body.instructions : '');
  for (const i of items) {
    const c = contentOf(i.content ?? i.output);
    n += MESSAGE_OVERHEAD_TOKENS + countTokens(c.text) + c.images * IMAGE_TOKENS;
    if (typeof i.arguments === 'string') n += countTokens(i.arguments);
    if (typeof i.input === 'string') n += countTokens(i.input);
  }
  if (Array.isArray(body.tools) && body.tools.length) n += countJsonTokens(body.tools);
  return n;
}

interface ResponseHead {
  id: string;
  created_at: number;
  model: string;
  /** Request parameters a response object repeats. */
  echo: Record<string, unknown>;
}

function echoed(body: Record<string, unknown>): Record<string, unknown> {
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: body.reasoning ?? { effort: null, summary: null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    metadata: body.metadata ?? {},
  };
}

function responseObject(r: ResponseHead, status: string, output: unknown[], usage: unknown, incomplete = false) {
  return {
    id: r.id,
    object: 'response',
    created_at: r.created_at,
    status,
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    model: r.model,
    output,
    ...r.echo,
    usage,
  };
}

interface OutputItem {
  kind: 'message' | 'function_call' | 'custom_tool_call';
  /** The item as output_item.added shows it (empty content / arguments). */
  added: Item;
  /** The finished item. */
  done: Item;
}

function outputItem(a: Answer, custom: Set<string>, ctx: HandlerContext): OutputItem {
  if (a.kind === 'text') {
    const base = { id: ctx.id('msg_'), type: 'message', role: 'assistant' };
    return {
      kind: 'message',
      added: { ...base, status: 'in_progress', content: [] },
      done: { ...base, status: 'completed', content: [{ type: 'output_text', text: a.text, annotations: [], logprobs: [] }] },
    };
  }
  const callId = ctx.id('call_');
  if (custom.has(a.name)) {
    const base = { id: ctx.id('ctc_'), type: 'custom_tool_call', call_id: callId, name: a.name };
    return { kind: 'custom_tool_call', added: { ...base, status: 'in_progress', input: '' }, done: { ...base, status: 'completed', input: a.input } };
  }
  const base = { id: ctx.id('fc_'), type: 'function_call', call_id: callId, name: a.name };
  return { kind: 'function_call', added: { ...base, status: 'in_progress', arguments: '' }, done: { ...base, status: 'completed', arguments: a.argsJson } };
}

/** The event sequence of a streamed response with one output item, numbered by `sequence_number`. */
function streamEvents(r: ResponseHead, item: OutputItem, a: Answer, final: Record<string, unknown>, chunks: number): string[] {
  const out: string[] = [];
  const emit = (type: string, fields: Record<string, unknown>) => out.push(namedEvent(type, { type, sequence_number: out.length, ...fields }));
  const itemId = item.done.id;
  const at = { item_id: itemId, output_index: 0 };
  emit('response.created', { response: responseObject(r, 'in_progress', [], null) });
  emit('response.in_progress', { response: responseObject(r, 'in_progress', [], null) });
  emit('response.output_item.added', { output_index: 0, item: item.added });
  if (a.kind === 'text') {
    const part = { ...at, content_index: 0 };
    emit('response.content_part.added', { ...part, part: { type: 'output_text', text: '', annotations: [] } });
    for (const delta of splitTokens(a.text, chunks)) emit('response.output_text.delta', { ...part, delta, logprobs: [] });
    emit('response.output_text.done', { ...part, text: a.text, logprobs: [] });
    emit('response.content_part.done', { ...part, part: { type: 'output_text', text: a.text, annotations: [] } });
  } else if (item.kind === 'custom_tool_call') {
    for (const delta of splitTokens(a.input, chunks)) emit('response.custom_tool_call_input.delta', { ...at, delta });
    emit('response.custom_tool_call_input.done', { ...at, input: a.input });
  } else {
    for (const delta of splitTokens(a.argsJson, chunks)) emit('response.function_call_arguments.delta', { ...at, delta });
    emit('response.function_call_arguments.done', { ...at, arguments: a.argsJson });
  }
  emit('response.output_item.done', { output_index: 0, item: item.done });
  emit(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
  return out;
}

/** POST /v1/responses/input_tokens: `{object: "response.input_tokens", input_tokens}` as /v1/responses counts them. */
export function responsesInputTokens(ctx: HandlerContext): Reply {
  const body = ctx.body;
  if (!isObject(body)) return openaiError(400, { message: 'The request body must be a JSON object.' });
  const p = requireString(body, 'model');
  if (p) return openaiError(400, p);
  const items = body.input === undefined ? [] : inputItems(body.input);
  return json(200, { object: 'response.input_tokens', input_tokens: inputTokenCount(body, items) });
}
