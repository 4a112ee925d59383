import { planAnswer, type Answer, type ToolMode, type ToolSpec } from './answers';
import { openaiError } from './errors';
import { dataEvent, DONE_EVENT, json, sse } from './reply';
import { countJsonTokens, countTokens, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, PROMPT_OVERHEAD_TOKENS, splitTokens } from './tokens';
import { textAndImages } from './content';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject, optionalInt, requireString, type Problem } from './validate';

/** POST /v1/chat/completions: the OpenAI chat completion, plain or streamed (see answers.ts for what it says). */
export function chatCompletions(ctx: HandlerContext): Reply {
  const body = ctx.body;
  if (!isObject(body)) return openaiError(400, { message: 'The request body must be a JSON object.' });
  const problem = validate(body, ctx.strictModels);
  if (problem) return openaiError(problem.status ?? 400, problem);

  const model = body.model as string;
  const messages = body.messages as unknown[];
  const tools = toolSpecs(body.tools);
  const last = lastTurn(messages);
  const answer = planAnswer({
    lastText: last.text,
    afterToolResult: last.afterToolResult,
    images: last.images,
    tools,
    toolMode: toolMode(body.tool_choice),
    maxTokens: (body.max_completion_tokens ?? body.max_tokens ?? undefined) as number | undefined,
    stop: typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop.filter((s): s is string => typeof s === 'string') : undefined,
    jsonSchema: responseSchema(body.response_format),
  });
  const n = (body.n as number | undefined) ?? 1;
  const promptTokens = promptTokenCount(messages) + (tools.length ? countJsonTokens(body.tools) : 0);
  const usage = { prompt_tokens: promptTokens, completion_tokens: answer.tokens * n, total_tokens: promptTokens + answer.tokens * n };
  const head = { id: ctx.id('chatcmpl-'), created: Math.floor(Date.now() / 1000), model };

  if (body.stream === true) {
    const so = body.stream_options;
    const includeUsage = isObject(so) && so.include_usage === true;
    return sse(streamEvents(head, answer, n, ctx, includeUsage ? usage : undefined));
  }
  const choices = [];
  for (let i = 0; i < n; i++) choices.push({ index: i, message: message(answer, ctx, i), logprobs: null, finish_reason: finishReason(answer) });
  return json(200, { ...head, object: 'chat.completion', system_fingerprint: FINGERPRINT, choices, usage });
}

const FINGERPRINT = 'fp_simulator';

function validate(body: Record<string, unknown>, strict: boolean): Problem | undefined {
  const p = requireString(body, 'model');
  if (p) return p;
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return { message: body.messages === undefined ? "Missing required parameter: 'messages'." : "Invalid 'messages': expected a non-empty array.", param: 'messages', code: body.messages === undefined ? 'missing_required_parameter' : 'invalid_value' };
  }
  for (let i = 0; i < body.messages.length; i++) {
    const m: unknown = body.messages[i];
    if (!isObject(m) || typeof m.role !== 'string') return { message: `Invalid 'messages[${i}]': expected an object with a 'role'.`, param: `messages[${i}]`, code: 'invalid_value' };
  }
  if (body.tools !== undefined && (!Array.isArray(body.tools) || body.tools.some((t) => !isObject(t) || !isObject(t.function) || typeof t.function.name !== 'string'))) {
    return { message: "Invalid 'tools': expected an array of {type:'function', function:{name, parameters}}.", param: 'tools', code: 'invalid_value' };
  }
  return optionalInt(body, 'n', 1, 128) ?? optionalInt(body, 'max_tokens', 1) ?? optionalInt(body, 'max_completion_tokens', 1) ?? checkModel(body.model as string, 'chat', strict);
}

function toolSpecs(tools: unknown): ToolSpec[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((t: { function: { name: string; description?: string; parameters?: unknown } }) => ({ name: t.function.name, description: t.function.description, schema: t.function.parameters }));
}

function toolMode(choice: unknown): ToolMode {
  if (choice === 'none') return { mode: 'none' };
  if (choice === 'required') return { mode: 'required' };
  if (isObject(choice) && isObject(choice.function) && typeof choice.function.name === 'string') return { mode: 'named', name: choice.function.name };
  return { mode: 'auto' };
}

/** Text and image count of a message's content (string, or an array of text / image_url parts). */
function contentOf(content: unknown): { text: string; images: number } {
  return textAndImages(content, (part) =>
    part.type === 'text' && typeof part.text === 'string' ? part.text : part.type === 'image_url' || part.type === 'input_image' ? true : undefined,
  );
}

/** What the answer responds to: a trailing tool result, else the last user message. */
function lastTurn(messages: unknown[]): { text: string; afterToolResult: boolean; images: number } {
  const last = messages[messages.length - 1] as Record<string, unknown>;
  if (last.role === 'tool' || last.role === 'function') return { ...contentOf(last.content), afterToolResult: true };
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as Record<string, unknown>;
    if (m.role === 'user') return { ...contentOf(m.content), afterToolResult: false };
  }
  return { text: '', images: 0, afterToolResult: false };
}

/** 3 per message + its text tokens (+85 per image, + tool calls as JSON, + name) + 3 for the reply. */
function promptTokenCount(messages: unknown[]): number {
  let n = PROMPT_OVERHEAD_TOKENS;
  for (const raw of messages) {
    const m = raw as Record<string, unknown>;
    const c = contentOf(m.content);
    n += MESSAGE_OVERHEAD_TOKENS + countTokens(c.text) + c.images * IMAGE_TOKENS;
    if (typeof m.name === 'string') n += countTokens(m.name);
    if (m.tool_calls !== undefined) n += countJsonTokens(m.tool_calls);
  }
  return n;
}

function finishReason(a: Answer): 'stop' | 'length' | 'tool_calls' {
  if (a.kind === 'tool') return 'tool_calls';
  return a.finish === 'length' ? 'length' : 'stop';
}

function toolCallId(ctx: HandlerContext, choice: number): string {
  return `${ctx.id('call_')}${choice ? `_${choice}` : ''}`;
}

function message(a: Answer, ctx: HandlerContext, choice: number) {
  if (a.kind === 'text') return { role: 'assistant', content: a.text, refusal: null, annotations: [] };
  return {
    role: 'assistant',
    content: null,
    refusal: null,
    annotations: [],
    tool_calls: [{ id: toolCallId(ctx, choice), type: 'function', function: { name: a.name, arguments: a.argsJson } }],
  };
}

interface Head {
  id: string;
  created: number;
  model: string;
}

/**
 * Chunks: per choice a role chunk (with the tool call's id and name for tool answers), the content
 * (or the arguments) in `streamChunks` pieces, a chunk with the finish reason; choices interleave step
 * by step. Then the usage chunk (`choices: []`) when asked for, then `[DONE]`.
 */
function streamEvents(head: Head, a: Answer, n: number, ctx: HandlerContext, usage: object | undefined): string[] {
  const pieces = splitTokens(a.kind === 'text' ? a.text : a.argsJson, ctx.streamChunks);
  const finish = finishReason(a);
  const steps: Array<(i: number) => object> = [];
  if (a.kind === 'text') {
    steps.push(() => ({ role: 'assistant', content: '', refusal: null }));
    for (const p of pieces) steps.push(() => ({ content: p }));
  } else {
    steps.push((i) => ({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: toolCallId(ctx, i), type: 'function', function: { name: a.name, arguments: '' } }] }));
    for (const p of pieces) steps.push(() => ({ tool_calls: [{ index: 0, function: { arguments: p } }] }));
  }
  const extra = usage ? { usage: null } : undefined;
  const chunk = (choice: object) => dataEvent({ ...head, object: 'chat.completion.chunk', system_fingerprint: FINGERPRINT, choices: [choice], ...extra });
  const out: string[] = [];
  for (const step of steps) {
    for (let i = 0; i < n; i++) out.push(chunk({ index: i, delta: step(i), logprobs: null, finish_reason: null }));
  }
  for (let i = 0; i < n; i++) out.push(chunk({ index: i, delta: {}, logprobs: null, finish_reason: finish }));
  if (usage) out.push(dataEvent({ ...head, object: 'chat.completion.chunk', system_fingerprint: FINGERPRINT, choices: [], usage }));
  out.push(DONE_EVENT);
  return out;
}

/** The schema of a structured-output request (`json_schema`), `{}` for `json_object`, else undefined. */
function responseSchema(format: unknown): unknown {
  if (!isObject(format)) return undefined;
  if (format.type === 'json_object') return {};
  if (format.type === 'json_schema') return isObject(format.json_schema) ? (format.json_schema.schema ?? {}) : {};
  return undefined;
}
