import { randomBytes } from 'node:crypto';
import { ValidationError } from '../errors';
import type { TokenUsage } from '../pricing/usage';
import { promptTokensOf } from '../pricing/usage';
import type { ChatChunk, ChatCompletion, ChatContentPart, ChatMessage, ChatRequest, ChatTool, ChatToolCall, ChatToolChoice } from './types';

/**
 * The OpenAI Responses API over a chat-completions channel: a Responses request as a chat request, a chat answer
 * as a Response object, and a chunk stream as the Responses event sequence. What is mapped and what is dropped:
 * docs/translation.md, "/v1/responses on a channel without the Responses API".
 */

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : JSON.stringify(v));
const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** How a tool name seen by chat maps back to the Responses item the client expects. */
interface ToolOrigin {
  kind: 'function' | 'custom';
  name: string;
  namespace?: string;
}

export interface ChatTranslation {
  chat: ChatRequest;
  /** By chat function name. */
  tools: Map<string, ToolOrigin>;
  /** The hosted tools the request offered that a chat channel cannot run: dropped, and named to the client. */
  dropped: string[];
}

/** Tool types a Responses request may name that are functions of the client's (the rest are hosted by OpenAI). */
const CLIENT_TOOL_TYPES = new Set(['function', 'custom', 'namespace']);

/** The hosted tool a tool_choice forces (`{type: 'web_search'}`, `{type: 'mcp', server_label}`), or undefined. */
function forcedHostedTool(c: unknown): string | undefined {
  if (!isObj(c) || typeof c.type !== 'string') return undefined;
  return CLIENT_TOOL_TYPES.has(c.type) || c.type === 'allowed_tools' ? undefined : c.type;
}

/** Custom tools (free-form text input, e.g. Codex's apply_patch) become chat functions of one string argument. */
const CUSTOM_PARAMETERS = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The whole input of the tool, as free-form text' } },
  required: ['input'],
  additionalProperties: false,
};

function addTool(t: Obj, where: string, out: ChatTool[], origins: Map<string, ToolOrigin>, dropped: string[], namespace?: string): void {
  const name = str(t.name);
  const chatName = namespace ? `${namespace}__${name}` : name;
  if (t.type === 'function') {
    const fn: ChatTool['function'] = { name: chatName };
    if (typeof t.description === 'string') fn.description = t.description;
    fn.parameters = t.parameters ?? { type: 'object', properties: {} };
    if (typeof t.strict === 'boolean') fn.strict = t.strict;
    out.push({ type: 'function', function: fn });
    origins.set(chatName, { kind: 'function', name, namespace });
  } else if (t.type === 'custom') {
    const description = [str(t.description), isObj(t.format) && t.format.type === 'grammar' ? `Input grammar (${str(t.format.syntax)}):\n${str(t.format.definition)}` : '']
      .filter(Boolean)
      .join('\n\n');
    out.push({ type: 'function', function: { name: chatName, ...(description ? { description } : {}), parameters: CUSTOM_PARAMETERS } });
    origins.set(chatName, { kind: 'custom', name, namespace });
  } else if (t.type === 'namespace' && !namespace && Array.isArray(t.tools)) {
    t.tools.forEach((inner, j) => isObj(inner) && addTool(inner, `${where}.tools[${j}]`, out, origins, dropped, name));
  } else {
    // A hosted tool (web_search, tool_search, file_search, code_interpreter, image_generation, computer_use, mcp...)
    // is only offered: the model answers without it. Forcing one is refused (toolChoice).
    const type = str(t.type) || 'unknown';
    if (!dropped.includes(type)) dropped.push(type);
  }
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.flatMap((p) => (isObj(p) && typeof p.text === 'string' ? [p.text] : [])).join('\n');
}

function userContent(content: unknown): string | ChatContentPart[] {
  if (typeof content === 'string') return content;
  const parts: ChatContentPart[] = [];
  for (const p of Array.isArray(content) ? content : []) {
    if (!isObj(p)) continue;
    if (typeof p.text === 'string') parts.push({ type: 'text', text: p.text });
    else if (p.type === 'input_image' && typeof p.image_url === 'string') {
      parts.push({ type: 'image_url', image_url: { url: p.image_url, ...(typeof p.detail === 'string' ? { detail: p.detail } : {}) } });
    }
  }
  return parts.every((p) => p.type === 'text') ? parts.map((p) => (p as { text: string }).text).join('\n') : parts;
}

/**
 * A Responses request as a chat request for `upstreamModel`. Hosted tools that are only offered are dropped (and
 * listed); what a chat channel cannot serve and the client insists on (a forced hosted tool, a stored conversation)
 * is refused, by name.
 */
export function responsesToChatRequest(req: Obj, upstreamModel: string): ChatTranslation {
  if (req.previous_response_id != null) {
    throw new ValidationError(
      "previous_response_id: is not supported for this model (its channel has no Responses API); send the whole conversation in 'input' with store: false",
      'previous_response_id',
    );
  }
  const messages: ChatMessage[] = [];
  const tools: ChatTool[] = [];
  const origins = new Map<string, ToolOrigin>();
  if (typeof req.instructions === 'string' && req.instructions) messages.push({ role: 'system', content: req.instructions });
  const dropped: string[] = [];
  (Array.isArray(req.tools) ? req.tools : []).forEach((t, i) => isObj(t) && addTool(t, `tools[${i}]`, tools, origins, dropped));
  const forced = forcedHostedTool(req.tool_choice);
  if (forced !== undefined) {
    throw new ValidationError(`tool_choice: forces the hosted tool '${forced}', which is not available for this model (its channel has no Responses API)`, 'tool_choice');
  }

  const items: unknown[] = typeof req.input === 'string' ? [{ type: 'message', role: 'user', content: req.input }] : (req.input as unknown[]);
  const lastAssistant = (): ChatMessage => {
    const last = messages[messages.length - 1];
    if (last?.role === 'assistant') return last;
    const m: ChatMessage = { role: 'assistant', content: null };
    messages.push(m);
    return m;
  };
  items.forEach((item, i) => {
    if (!isObj(item)) return;
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = str(item.role);
        if (role === 'system' || role === 'developer') messages.push({ role: 'system', content: textOf(item.content) });
        else if (role === 'assistant') {
          const m = lastAssistant();
          m.content = [m.content, textOf(item.content)].filter((t) => typeof t === 'string' && t !== '').join('\n') || null;
        } else if (role === 'user') messages.push({ role: 'user', content: userContent(item.content) });
        return;
      }
      case 'function_call':
      case 'custom_tool_call': {
        const ns = typeof item.namespace === 'string' ? item.namespace : undefined;
        const name = ns ? `${ns}__${str(item.name)}` : str(item.name);
        const args = type === 'custom_tool_call' ? JSON.stringify({ input: str(item.input) }) : str(item.arguments) || '{}';
        const m = lastAssistant();
        const call: ChatToolCall = { id: str(item.call_id) || id('call'), type: 'function', function: { name, arguments: args } };
        m.tool_calls = [...((m.tool_calls as ChatToolCall[] | undefined) ?? []), call];
        return;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
        messages.push({ role: 'tool', tool_call_id: str(item.call_id), content: typeof item.output === 'string' ? item.output : textOf(item.output) });
        return;
      case 'additional_tools':
        (Array.isArray(item.tools) ? item.tools : []).forEach((t, j) => isObj(t) && addTool(t, `input[${i}].tools[${j}]`, tools, origins, dropped));
        return;
      default:
        // Reasoning items, references to stored items and hosted-tool calls have no chat equivalent: dropped.
        return;
    }
  });
  if (messages.length === 0) throw new ValidationError('input: must contain at least one message', 'input');

  const chat: ChatRequest = { model: upstreamModel, messages };
  // max_completion_tokens: what reasoning models on chat accept (max_tokens is refused by o-series and gpt-5).
  if (typeof req.max_output_tokens === 'number') chat.max_completion_tokens = req.max_output_tokens;
  if (typeof req.temperature === 'number') chat.temperature = req.temperature;
  if (typeof req.top_p === 'number') chat.top_p = req.top_p;
  if (typeof req.parallel_tool_calls === 'boolean' && tools.length) chat.parallel_tool_calls = req.parallel_tool_calls;
  if (typeof req.user === 'string') chat.user = req.user;
  if (isObj(req.reasoning) && typeof req.reasoning.effort === 'string') chat.reasoning_effort = req.reasoning.effort;
  if (tools.length) chat.tools = tools;
  const choice = toolChoice(req.tool_choice, origins);
  if (choice !== undefined && tools.length) chat.tool_choice = choice;
  const format = isObj(req.text) && isObj(req.text.format) ? req.text.format : undefined;
  if (format?.type === 'json_schema') {
    chat.response_format = { type: 'json_schema', json_schema: { name: str(format.name) || 'output', schema: format.schema, ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}) } };
  } else if (format?.type === 'json_object') chat.response_format = { type: 'json_object' };
  if (req.stream === true) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return { chat, tools: origins, dropped };
}

function toolChoice(c: unknown, origins: Map<string, ToolOrigin>): ChatToolChoice | undefined {
  if (c === 'auto' || c === 'none' || c === 'required') return c;
  if (isObj(c) && (c.type === 'function' || c.type === 'custom') && typeof c.name === 'string') {
    const chatName = [...origins].find(([, o]) => o.name === c.name)?.[0] ?? c.name;
    return { type: 'function', function: { name: chatName } };
  }
  return undefined;
}

/** The Responses `usage`: input counts cached tokens (as chat's prompt_tokens does), output counts reasoning. */
export function toResponsesUsage(u: TokenUsage): Obj {
  const input = promptTokensOf(u);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u.cacheRead },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: input + u.output,
  };
}

function toolItem(call: { id?: string; name: string; arguments: string }, origins: Map<string, ToolOrigin>, status = 'completed'): Obj {
  const o = origins.get(call.name) ?? { kind: 'function' as const, name: call.name };
  const ns = o.namespace ? { namespace: o.namespace } : {};
  if (o.kind === 'custom') {
    let input = call.arguments;
    try {
      const parsed = JSON.parse(call.arguments) as unknown;
      if (isObj(parsed) && typeof parsed.input === 'string') input = parsed.input;
    } catch {
      // not JSON: the text itself is the input
    }
    return { type: 'custom_tool_call', id: id('ctc'), call_id: call.id || id('call'), name: o.name, input, status, ...ns };
  }
  return { type: 'function_call', id: id('fc'), call_id: call.id || id('call'), name: o.name, arguments: call.arguments || '{}', status, ...ns };
}

function statusOf(finish: string | null | undefined): { status: string; incomplete_details: Obj | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/** The Response object around `output` (the request's settings echoed as the Responses API does). */
export function responseObject(req: Obj, respId: string, createdAt: number, output: Obj[], extra: Obj): Obj {
  return {
    id: respId,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    model: req.model,
    output,
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: isObj(req.reasoning) ? (req.reasoning.effort ?? null) : null, summary: null },
    store: false,
    temperature: req.temperature ?? 1,
    text: req.text ?? { format: { type: 'text' } },
    tool_choice: req.tool_choice ?? 'auto',
    tools: req.tools ?? [],
    top_p: req.top_p ?? 1,
    truncation: 'disabled',
    usage: null,
    metadata: req.metadata ?? {},
    ...extra,
  };
}

/** A chat completion as a Response object. */
export function chatToResponse(c: ChatCompletion, req: Obj, origins: Map<string, ToolOrigin>, usage: TokenUsage): Obj {
  const choice = c.choices?.[0];
  const msg = choice?.message;
  const output: Obj[] = [];
  if (typeof msg?.reasoning_content === 'string' && msg.reasoning_content) {
    output.push({ type: 'reasoning', id: id('rs'), summary: [{ type: 'summary_text', text: msg.reasoning_content }] });
  }
  if (typeof msg?.content === 'string' && msg.content) {
    output.push({ type: 'message', id: id('msg'), status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: msg.content, annotations: [] }] });
  }
  for (const call of msg?.tool_calls ?? []) output.push(toolItem({ id: call.id, name: call.function.name, arguments: call.function.arguments }, origins));
  return responseObject(req, id('resp'), Math.floor(Date.now() / 1000), output, { ...statusOf(choice?.finish_reason), usage: toResponsesUsage(usage) });
}

export interface ResponsesEvent {
  type: string;
  [k: string]: unknown;
}

type OpenItem =
  | { kind: 'reasoning'; index: number; id: string; text: string }
  | { kind: 'message'; index: number; id: string; text: string }
  | { kind: 'tool'; index: number; chatIndex: number; callId: string; name: string; args: string; itemId: string };

/**
 * Chat chunks as the Responses event sequence: response.created and response.in_progress first, then per output
 * item output_item.added, its deltas (reasoning summary text, output text, function call arguments) and
 * output_item.done, and response.completed (or response.incomplete) with the whole Response and its usage.
 */
export class ChatToResponsesStream {
  private seq = 0;
  private readonly respId = id('resp');
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private readonly output: Obj[] = [];
  private open: OpenItem | null = null;
  private finish: string | null = null;

  constructor(
    private readonly req: Obj,
    private readonly origins: Map<string, ToolOrigin>,
  ) {}

  private ev(type: string, body: Obj): ResponsesEvent {
    return { type, sequence_number: this.seq++, ...body };
  }

  private snapshot(extra: Obj = {}): Obj {
    return responseObject(this.req, this.respId, this.createdAt, [...this.output], extra);
  }

  start(): ResponsesEvent[] {
    return [this.ev('response.created', { response: this.snapshot() }), this.ev('response.in_progress', { response: this.snapshot() })];
  }

  push(chunk: ChatChunk): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    const choice = chunk.choices?.find((c) => c.index === 0);
    if (!choice) return out;
    const d = choice.delta ?? {};
    if (typeof d.reasoning_content === 'string' && d.reasoning_content) {
      if (this.open?.kind !== 'reasoning') {
        out.push(...this.close());
        const item = { kind: 'reasoning' as const, index: this.output.length, id: id('rs'), text: '' };
        this.open = item;
        this.output.push({ type: 'reasoning', id: item.id, summary: [] });
        out.push(this.ev('response.output_item.added', { output_index: item.index, item: { type: 'reasoning', id: item.id, summary: [] } }));
        out.push(this.ev('response.reasoning_summary_part.added', { item_id: item.id, output_index: item.index, summary_index: 0, part: { type: 'summary_text', text: '' } }));
      }
      const r = this.open as Extract<OpenItem, { kind: 'reasoning' }>;
      r.text += d.reasoning_content;
      out.push(this.ev('response.reasoning_summary_text.delta', { item_id: r.id, output_index: r.index, summary_index: 0, delta: d.reasoning_content }));
    }
    if (typeof d.content === 'string' && d.content) {
      if (this.open?.kind !== 'message') {
        out.push(...this.close());
        const item = { kind: 'message' as const, index: this.output.length, id: id('msg'), text: '' };
        this.open = item;
        const added = { type: 'message', id: item.id, status: 'in_progress', role: 'assistant', content: [] };
        this.output.push(added);
        out.push(this.ev('response.output_item.added', { output_index: item.index, item: added }));
        out.push(this.ev('response.content_part.added', { item_id: item.id, output_index: item.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }));
      }
      const m = this.open as Extract<OpenItem, { kind: 'message' }>;
      m.text += d.content;
      out.push(this.ev('response.output_text.delta', { item_id: m.id, output_index: m.index, content_index: 0, delta: d.content, logprobs: [] }));
    }
    for (const call of d.tool_calls ?? []) {
      if (this.open?.kind !== 'tool' || this.open.chatIndex !== call.index) {
        out.push(...this.close());
        const item = { kind: 'tool' as const, index: this.output.length, chatIndex: call.index, callId: call.id ?? id('call'), name: call.function?.name ?? '', args: '', itemId: '' };
        const added = toolItem({ id: item.callId, name: item.name, arguments: '' }, this.origins, 'in_progress');
        if (added.type === 'custom_tool_call') added.input = '';
        else added.arguments = '';
        item.itemId = String(added.id);
        this.open = item;
        this.output.push(added);
        out.push(this.ev('response.output_item.added', { output_index: item.index, item: added }));
      }
      const t = this.open as Extract<OpenItem, { kind: 'tool' }>;
      const args = call.function?.arguments;
      if (args) {
        t.args += args;
        if (this.origins.get(t.name)?.kind !== 'custom') out.push(this.ev('response.function_call_arguments.delta', { item_id: t.itemId, output_index: t.index, delta: args }));
      }
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  /** Closes the open item (its `.done` events) and records it whole in the output. */
  private close(): ResponsesEvent[] {
    const o = this.open;
    if (!o) return [];
    this.open = null;
    const out: ResponsesEvent[] = [];
    if (o.kind === 'reasoning') {
      const item = { type: 'reasoning', id: o.id, summary: [{ type: 'summary_text', text: o.text }] };
      out.push(this.ev('response.reasoning_summary_text.done', { item_id: o.id, output_index: o.index, summary_index: 0, text: o.text }));
      out.push(this.ev('response.reasoning_summary_part.done', { item_id: o.id, output_index: o.index, summary_index: 0, part: { type: 'summary_text', text: o.text } }));
      this.output[o.index] = item;
      out.push(this.ev('response.output_item.done', { output_index: o.index, item }));
    } else if (o.kind === 'message') {
      const part = { type: 'output_text', text: o.text, annotations: [] };
      const item = { type: 'message', id: o.id, status: 'completed', role: 'assistant', content: [part] };
      out.push(this.ev('response.output_text.done', { item_id: o.id, output_index: o.index, content_index: 0, text: o.text, logprobs: [] }));
      out.push(this.ev('response.content_part.done', { item_id: o.id, output_index: o.index, content_index: 0, part }));
      this.output[o.index] = item;
      out.push(this.ev('response.output_item.done', { output_index: o.index, item }));
    } else {
      const item: Obj = { ...toolItem({ id: o.callId, name: o.name, arguments: o.args }, this.origins), id: o.itemId };
      if (item.type === 'custom_tool_call') {
        out.push(this.ev('response.custom_tool_call_input.delta', { item_id: o.itemId, output_index: o.index, delta: item.input }));
        out.push(this.ev('response.custom_tool_call_input.done', { item_id: o.itemId, output_index: o.index, input: item.input }));
      } else {
        out.push(this.ev('response.function_call_arguments.done', { item_id: o.itemId, output_index: o.index, name: item.name, arguments: item.arguments }));
      }
      this.output[o.index] = item;
      out.push(this.ev('response.output_item.done', { output_index: o.index, item }));
    }
    return out;
  }

  /** The closing events once the upstream stream ended: the last item's, then response.completed or .incomplete. */
  end(usage: TokenUsage): ResponsesEvent[] {
    const out = this.close();
    const s = statusOf(this.finish);
    const type = s.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    out.push(this.ev(type, { response: this.snapshot({ ...s, usage: toResponsesUsage(usage) }) }));
    return out;
  }

  /** The `error` event of a stream that failed after it started. */
  error(code: string, message: string): ResponsesEvent {
    return this.ev('error', { code, message, param: null });
  }
}
