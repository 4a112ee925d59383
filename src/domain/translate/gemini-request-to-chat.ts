import { ValidationError } from '../errors';
import { geminiField, type GeminiContent, type GeminiPart, type GeminiRequest } from './gemini-types';
import type { ChatContentPart, ChatMessage, ChatRequest, ChatTool, ChatToolCall } from './types';

/**
 * How a thinking request reaches a chat upstream: `reasoning_effort` (an OpenAI reasoning model, which also refuses
 * temperature and top_p), `thinking` (an Anthropic model, over chat), or not at all (a model that does not reason).
 */
export type ThinkingTarget = 'effort' | 'budget' | 'none';

/** Budgets for a `thinkingLevel`, and levels for a budget, where only the other is understood. */
const LEVEL_BUDGETS: Record<string, number> = { minimal: 1024, low: 1024, medium: 8192, high: 24576 };
/** The smallest budget Anthropic accepts. */
const MIN_THINKING_BUDGET = 1024;

/**
 * A Gemini generateContent request as a chat-completions request, for a model on a chat channel (`openai`, or
 * `anthropic` through its chat adapter).
 *
 * - `systemInstruction` -> a system message; `contents` keep their order, `model` turns become assistant turns;
 * - parts: text; `inlineData` images -> `image_url` data URIs, audio -> `input_audio`, other files -> `file`;
 *   `fileData` images -> `image_url`; thought parts and signatures are the Gemini model's own and are dropped;
 * - `functionCall` -> `tool_calls` (its `id`, else one made here) and `functionResponse` -> `tool` messages paired by
 *   id, else by name in call order;
 * - `functionDeclarations` -> function tools (`parametersJsonSchema` or `parameters`, OpenAPI's upper-case types in
 *   lower case, as chat and Messages upstreams need them); every other tool (`googleSearch`, `codeExecution`, `urlContext`...) is named in `dropped` and left out;
 * - `toolConfig.functionCallingConfig` -> `tool_choice`; `generationConfig` -> temperature, top_p, max_tokens,
 *   stop, n, penalties, seed, `response_format` (JSON, with its schema); `thinkingConfig` -> `reasoning_effort` or
 *   `thinking` as `target` says; `safetySettings` and `cachedContent` have no equivalent and are dropped.
 */
export function geminiToChatRequest(req: GeminiRequest, upstreamModel: string, opts: { stream: boolean; dropped: string[]; thinking: ThinkingTarget }): ChatRequest {
  const messages: ChatMessage[] = [];
  const system = systemText(geminiField(req, 'systemInstruction'));
  if (system) messages.push({ role: 'system', content: system });

  // Calls waiting for their response: by id, and by name in call order.
  const pendingByName = new Map<string, string[]>();
  const contents = req.contents ?? [];
  contents.forEach((content, i) => {
    const parts = Array.isArray(content?.parts) ? content.parts : [];
    if (content?.role === 'model') {
      messages.push(assistantMessage(parts, i, pendingByName));
      return;
    }
    const tool: ChatMessage[] = [];
    const user: ChatContentPart[] = [];
    parts.forEach((p, j) => {
      const fr = geminiField<GeminiPart['functionResponse']>(p, 'functionResponse');
      if (fr) tool.push(toolMessage(fr, pendingByName, `contents[${i}].parts[${j}]`));
      else {
        const part = userPart(p, `contents[${i}].parts[${j}]`);
        if (part) user.push(part);
      }
    });
    messages.push(...tool);
    if (user.length) messages.push({ role: 'user', content: user.length === 1 && user[0].type === 'text' ? (user[0] as { text: string }).text : user });
  });
  if (!messages.some((m) => m.role !== 'system')) throw new ValidationError('contents: at least one content with parts is required', 'contents');

  const out: ChatRequest = { model: upstreamModel, messages };
  const tools = chatTools(req.tools, opts.dropped);
  if (tools.length) out.tools = tools;
  const choice = toolChoice(geminiField(req, 'toolConfig'));
  if (choice !== undefined && (tools.length || choice === 'none')) out.tool_choice = choice;
  applyGenerationConfig(out, geminiField<Record<string, unknown>>(req, 'generationConfig') ?? {}, opts.thinking);
  if (opts.stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}

function systemText(instruction: GeminiContent | string | undefined): string {
  if (instruction === undefined || instruction === null) return '';
  if (typeof instruction === 'string') return instruction;
  const parts = Array.isArray(instruction.parts) ? instruction.parts : [];
  return parts.map((p) => (typeof p?.text === 'string' ? p.text : '')).filter(Boolean).join('\n');
}

function assistantMessage(parts: GeminiPart[], i: number, pending: Map<string, string[]>): ChatMessage {
  let text = '';
  const calls: ChatToolCall[] = [];
  parts.forEach((p, j) => {
    if (p?.thought === true) return;
    if (typeof p?.text === 'string') text += p.text;
    const fc = geminiField<GeminiPart['functionCall']>(p, 'functionCall');
    if (fc) {
      if (typeof fc.name !== 'string' || !fc.name) throw new ValidationError(`contents[${i}].parts[${j}].functionCall.name: is required`, `contents[${i}].parts[${j}].functionCall.name`);
      const id = typeof fc.id === 'string' && fc.id ? fc.id : `call_${i}_${j}`;
      calls.push({ id, type: 'function', function: { name: fc.name, arguments: JSON.stringify(fc.args ?? {}) } });
      const queue = pending.get(fc.name) ?? [];
      queue.push(id);
      pending.set(fc.name, queue);
    }
  });
  const m: ChatMessage = { role: 'assistant', content: text || (calls.length ? null : '') };
  if (calls.length) m.tool_calls = calls;
  return m;
}

function toolMessage(fr: NonNullable<GeminiPart['functionResponse']>, pending: Map<string, string[]>, where: string): ChatMessage {
  if (typeof fr.name !== 'string' || !fr.name) throw new ValidationError(`${where}.functionResponse.name: is required`, `${where}.functionResponse.name`);
  const queue = pending.get(fr.name) ?? [];
  let id: string | undefined;
  if (typeof fr.id === 'string' && queue.includes(fr.id)) {
    id = fr.id;
    queue.splice(queue.indexOf(fr.id), 1);
  } else id = queue.shift();
  if (!id) throw new ValidationError(`${where}.functionResponse: answers no functionCall named '${fr.name}' in an earlier model turn`, `${where}.functionResponse`);
  const response = fr.response;
  return { role: 'tool', tool_call_id: id, content: typeof response === 'string' ? response : JSON.stringify(response ?? {}) };
}

function userPart(p: GeminiPart, where: string): ChatContentPart | null {
  if (p === null || typeof p !== 'object') throw new ValidationError(`${where}: must be an object`, where);
  if (p.thought === true) return null;
  if (typeof p.text === 'string') return p.text ? { type: 'text', text: p.text } : null;
  const inline = geminiField<{ mimeType?: string; mime_type?: string; data?: string }>(p, 'inlineData');
  if (inline) {
    const mime = String(geminiField(inline, 'mimeType') ?? '').toLowerCase();
    const data = String(inline.data ?? '');
    if (mime.startsWith('image/')) return { type: 'image_url', image_url: { url: `data:${mime};base64,${data}` } };
    if (mime === 'audio/wav' || mime === 'audio/x-wav' || mime === 'audio/mp3' || mime === 'audio/mpeg') {
      return { type: 'input_audio', input_audio: { data, format: mime.includes('wav') ? 'wav' : 'mp3' } };
    }
    return { type: 'file', file: { filename: 'file', file_data: `data:${mime || 'application/octet-stream'};base64,${data}` } };
  }
  const file = geminiField<{ mimeType?: string; fileUri?: string }>(p, 'fileData');
  if (file) {
    const uri = String(geminiField(file, 'fileUri') ?? '');
    const mime = String(geminiField(file, 'mimeType') ?? '').toLowerCase();
    if (/^https:\/\//i.test(uri) && (mime === '' || mime.startsWith('image/'))) return { type: 'image_url', image_url: { url: uri } };
    throw new ValidationError(`${where}.fileData: only https images can be sent to this model`, `${where}.fileData`);
  }
  if (geminiField(p, 'functionCall')) throw new ValidationError(`${where}.functionCall: belongs in a model turn`, `${where}.functionCall`);
  // executableCode, codeExecutionResult, videoMetadata... are the Gemini model's own: nothing to send.
  return null;
}

/** The names Gemini tools other than function declarations go by (what `x-gateway-dropped-tools` lists). */
function chatTools(tools: GeminiRequest['tools'], dropped: string[]): ChatTool[] {
  const out: ChatTool[] = [];
  for (const tool of tools ?? []) {
    if (!tool || typeof tool !== 'object') continue;
    for (const [kind, value] of Object.entries(tool)) {
      if (kind !== 'functionDeclarations' && kind !== 'function_declarations') {
        if (!dropped.includes(kind)) dropped.push(kind);
        continue;
      }
      for (const d of Array.isArray(value) ? value : []) {
        const given = geminiField(d, 'parametersJsonSchema') ?? d.parameters;
        const schema = given !== undefined ? jsonSchemaOf(given) : undefined;
        out.push({
          type: 'function',
          function: { name: d.name, ...(d.description ? { description: d.description } : {}), parameters: schema ?? { type: 'object', properties: {} } },
        });
      }
    }
  }
  return out;
}

function toolChoice(config: GeminiRequest['toolConfig']): ChatRequest['tool_choice'] {
  const fc = geminiField<{ mode?: string; allowedFunctionNames?: string[] }>(config, 'functionCallingConfig');
  const mode = String(fc?.mode ?? '').toUpperCase();
  if (mode === 'NONE') return 'none';
  if (mode === 'ANY') {
    const names = geminiField<string[]>(fc, 'allowedFunctionNames') ?? [];
    return names.length === 1 ? { type: 'function', function: { name: names[0] } } : 'required';
  }
  if (mode === 'AUTO' || mode === 'VALIDATED') return 'auto';
  return undefined;
}

const SCHEMA_KEYS_DROPPED = new Set(['propertyOrdering', 'property_ordering', 'example', 'nullable']);

/**
 * A Gemini (OpenAPI 3.0 subset) schema as JSON Schema: `OBJECT`, `INTEGER`... in lower case, `nullable` as a
 * `null` type, Gemini-only keys left out. Depth is bounded by the request's nesting limit.
 */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (schema === null || typeof schema !== 'object') return schema;
  const s = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) {
    if (SCHEMA_KEYS_DROPPED.has(k)) continue;
    if (k === 'type' && typeof v === 'string') out.type = v.toLowerCase();
    else if (k === 'properties' && v && typeof v === 'object') out.properties = Object.fromEntries(Object.entries(v).map(([name, p]) => [name, jsonSchemaOf(p)]));
    else if (k === 'items' || k === 'anyOf' || k === 'any_of' || k === 'oneOf' || k === 'allOf') out[k === 'any_of' ? 'anyOf' : k] = jsonSchemaOf(v);
    else out[k] = v;
  }
  if (s.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function applyGenerationConfig(out: ChatRequest, g: Record<string, unknown>, thinking: ThinkingTarget): void {
  // OpenAI's reasoning models refuse sampling parameters.
  if (thinking !== 'effort') {
    const temperature = num(geminiField(g, 'temperature'));
    if (temperature !== undefined) out.temperature = temperature;
    const topP = num(geminiField(g, 'topP'));
    if (topP !== undefined) out.top_p = topP;
  }
  const max = num(geminiField(g, 'maxOutputTokens'));
  if (max !== undefined && max >= 1) out.max_tokens = Math.floor(max);
  const stop = geminiField<unknown[]>(g, 'stopSequences');
  if (Array.isArray(stop) && stop.length) out.stop = stop.filter((s): s is string => typeof s === 'string');
  const n = num(geminiField(g, 'candidateCount'));
  if (n !== undefined && n > 1) out.n = Math.floor(n);
  const presence = num(geminiField(g, 'presencePenalty'));
  if (presence !== undefined) out.presence_penalty = presence;
  const frequency = num(geminiField(g, 'frequencyPenalty'));
  if (frequency !== undefined) out.frequency_penalty = frequency;
  const seed = num(geminiField(g, 'seed'));
  if (seed !== undefined) out.seed = seed;
  const mime = geminiField<string>(g, 'responseMimeType');
  if (mime === 'application/json') {
    // Gemini CLI writes even its JSON Schemas with OpenAPI's upper-case types, which Gemini reads and chat does not.
    const given = geminiField(g, 'responseJsonSchema') ?? geminiField(g, 'responseSchema');
    const schema = given !== undefined ? jsonSchemaOf(given) : undefined;
    out.response_format = schema ? { type: 'json_schema', json_schema: { name: 'response', schema } } : { type: 'json_object' };
  }
  const tc = geminiField<Record<string, unknown>>(g, 'thinkingConfig');
  if (tc && thinking !== 'none') applyThinking(out, tc, thinking);
}

function applyThinking(out: ChatRequest, tc: Record<string, unknown>, target: ThinkingTarget): void {
  const level = typeof geminiField(tc, 'thinkingLevel') === 'string' ? String(geminiField(tc, 'thinkingLevel')).toLowerCase() : undefined;
  const budget = num(geminiField(tc, 'thinkingBudget'));
  if (budget === 0) return;
  if (target === 'effort') {
    const effort = level && LEVEL_BUDGETS[level] !== undefined ? level : budget === undefined || budget < 0 ? 'medium' : budget <= 1024 ? 'low' : budget <= 8192 ? 'medium' : 'high';
    out.reasoning_effort = effort === 'minimal' ? 'low' : effort;
    return;
  }
  // Anthropic wants a tool round's thinking blocks back, which chat cannot carry: such a round goes without thinking.
  if (out.messages.some((m) => m.role === 'assistant' && m.tool_calls?.length)) return;
  const tokens = budget !== undefined && budget > 0 ? budget : LEVEL_BUDGETS[level ?? 'medium'] ?? LEVEL_BUDGETS.medium;
  const budgetTokens = Math.max(MIN_THINKING_BUDGET, Math.floor(tokens));
  out.thinking = { type: 'enabled', budget_tokens: budgetTokens };
  // Anthropic counts thinking inside max_tokens, which must exceed the budget.
  const max = (out.max_tokens as number | undefined) ?? 0;
  if (max <= budgetTokens) out.max_tokens = budgetTokens + Math.max(max, 4096);
}
