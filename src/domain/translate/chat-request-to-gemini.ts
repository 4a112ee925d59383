import { ValidationError } from '../errors';
import type { GeminiContent, GeminiPart, GeminiRequest } from './gemini-types';
import { signatureOf } from './thought-signature-ids';
import type { ChatContentPart, ChatMessage, ChatRequest } from './types';

/** `reasoning_effort` as a thinking budget (Gemini's OpenAI-compatible endpoint uses the same figures). */
const EFFORT_BUDGETS: Record<string, number> = { minimal: 512, low: 1024, medium: 8192, high: 24576 };

/**
 * A chat-completions request as a Gemini generateContent request, for a model on a `gemini` channel (chat, and
 * Messages and Responses over chat).
 *
 * - system and developer messages -> `systemInstruction`; user turns -> `user` contents, assistant turns -> `model`;
 * - text parts; `image_url` data URIs -> `inlineData`, https URLs -> `fileData`; `input_audio` -> `inlineData`;
 * - assistant `tool_calls` -> `functionCall` parts, with the `thoughtSignature` their id carries restored; `tool`
 *   messages -> `functionResponse` parts (named after the call they answer; a JSON object answer as is, anything
 *   else as `{result}`), consecutive ones in one turn;
 * - function tools -> `functionDeclarations` with their JSON Schema as `parametersJsonSchema`; other tool types are
 *   named in `dropped` and left out; `tool_choice` -> `toolConfig`;
 * - temperature, top_p, max_(completion_)tokens, stop, n, penalties, seed, `response_format` and `reasoning_effort`
 *   -> `generationConfig`.
 */
export function chatToGeminiRequest(req: ChatRequest, dropped: string[]): GeminiRequest {
  if (req.n != null && req.n !== 1) throw new ValidationError('n: this model answers one choice per request (n must be 1)', 'n');
  const system: string[] = [];
  const contents: GeminiContent[] = [];
  const names = new Map<string, string>();
  const push = (role: 'user' | 'model', parts: GeminiPart[], merge: boolean) => {
    if (!parts.length) return;
    const last = contents[contents.length - 1];
    if (merge && last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  req.messages.forEach((m, i) => {
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(textOf(m.content));
        break;
      case 'user':
        push('user', userParts(m, i), false);
        break;
      case 'assistant':
        push('model', modelParts(m, i, names), false);
        break;
      case 'tool':
      case 'function': {
        const id = m.role === 'function' ? `call_${m.name ?? ''}` : m.tool_call_id;
        const name = (id && names.get(id)) ?? m.name;
        if (!name) throw new ValidationError(`messages[${i}].tool_call_id: answers no tool call of an earlier assistant message`, `messages[${i}].tool_call_id`);
        push('user', [{ functionResponse: { name, response: responseOf(textOf(m.content)) } }], true);
        break;
      }
      default:
        throw new ValidationError(`messages[${i}].role: '${m.role}' is not supported for this model`, `messages[${i}].role`);
    }
  });
  if (!contents.length) throw new ValidationError('messages: at least one user or assistant message is required', 'messages');

  const out: GeminiRequest = { contents };
  const sys = system.filter(Boolean).join('\n\n');
  if (sys) out.systemInstruction = { parts: [{ text: sys }] };
  const declarations: Record<string, unknown>[] = [];
  for (const [i, t] of (req.tools ?? []).entries()) {
    if (t.type !== 'function' || !t.function) {
      if (!dropped.includes(t.type)) dropped.push(t.type);
      continue;
    }
    if (!t.function.name) throw new ValidationError(`tools[${i}].function.name: is required`, `tools[${i}].function.name`);
    declarations.push({
      name: t.function.name,
      ...(t.function.description ? { description: t.function.description } : {}),
      ...(t.function.parameters !== undefined ? { parametersJsonSchema: t.function.parameters } : {}),
    });
  }
  if (declarations.length) out.tools = [{ functionDeclarations: declarations as never }];
  const mode = callingConfig(req.tool_choice);
  if (mode && (declarations.length || mode.mode === 'NONE')) out.toolConfig = { functionCallingConfig: mode };
  const config = generationConfig(req);
  if (Object.keys(config).length) out.generationConfig = config;
  return out;
}

function textOf(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('');
}

function responseOf(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // plain text
  }
  return { result: text };
}

const DATA_URI = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+);base64,(.*)$/is;

function userParts(m: ChatMessage, i: number): GeminiPart[] {
  if (typeof m.content === 'string') return m.content ? [{ text: m.content }] : [];
  return (m.content ?? []).map((p, j) => userPart(p, `messages[${i}].content[${j}]`)).filter((p): p is GeminiPart => p !== null);
}

function userPart(p: ChatContentPart, where: string): GeminiPart | null {
  if (p.type === 'text') return typeof p.text === 'string' && p.text ? { text: p.text } : null;
  if (p.type === 'image_url') {
    const image = (p as { image_url?: { url?: unknown } | string }).image_url;
    const url = String(typeof image === 'string' ? image : (image?.url ?? ''));
    const data = DATA_URI.exec(url);
    if (data) return { inlineData: { mimeType: data[1].toLowerCase(), data: data[2] } };
    if (/^https:\/\//i.test(url)) return { fileData: { mimeType: 'image/*', fileUri: url } };
    throw new ValidationError(`${where}.image_url.url: must be an https URL or a base64 data URI`, where);
  }
  if (p.type === 'input_audio') {
    const a = (p as { input_audio?: { data?: unknown; format?: unknown } }).input_audio;
    return { inlineData: { mimeType: `audio/${a?.format === 'mp3' ? 'mp3' : 'wav'}`, data: String(a?.data ?? '') } };
  }
  if (p.type === 'file') {
    const data = DATA_URI.exec(String((p as { file?: { file_data?: unknown } }).file?.file_data ?? ''));
    if (data) return { inlineData: { mimeType: data[1].toLowerCase(), data: data[2] } };
  }
  throw new ValidationError(`${where}: content part type '${p.type}' is not supported for this model`, where);
}

function modelParts(m: ChatMessage, i: number, names: Map<string, string>): GeminiPart[] {
  const parts: GeminiPart[] = [];
  const text = typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? m.content.map((p) => (p.type === 'text' ? String(p.text ?? '') : p.type === 'refusal' ? String(p.refusal ?? '') : '')).join('') : '';
  if (text) parts.push({ text });
  for (const [j, call] of (m.tool_calls ?? []).entries()) {
    const name = call.function?.name;
    if (!name) throw new ValidationError(`messages[${i}].tool_calls[${j}].function.name: is required`, `messages[${i}].tool_calls[${j}].function.name`);
    if (call.id) names.set(call.id, name);
    const part: GeminiPart = { functionCall: { name, args: argsOf(call.function?.arguments, `messages[${i}].tool_calls[${j}].function.arguments`) } };
    const signature = signatureOf(call.id);
    if (signature) part.thoughtSignature = signature;
    parts.push(part);
  }
  if (m.function_call) {
    names.set(`call_${m.function_call.name}`, m.function_call.name);
    parts.push({ functionCall: { name: m.function_call.name, args: argsOf(m.function_call.arguments, `messages[${i}].function_call.arguments`) } });
  }
  return parts;
}

function argsOf(args: unknown, where: string): Record<string, unknown> {
  if (args === undefined || args === null || args === '') return {};
  try {
    const v: unknown = JSON.parse(String(args));
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // refused below
  }
  throw new ValidationError(`${where}: must be a JSON object`, where);
}

function callingConfig(choice: ChatRequest['tool_choice']): { mode: string; allowedFunctionNames?: string[] } | undefined {
  if (choice == null) return undefined;
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'auto') return { mode: 'AUTO' };
  if (choice === 'required') return { mode: 'ANY' };
  const name = typeof choice === 'object' ? (choice.function as { name?: unknown } | undefined)?.name : undefined;
  return typeof name === 'string' && name ? { mode: 'ANY', allowedFunctionNames: [name] } : undefined;
}

function generationConfig(req: ChatRequest): Record<string, unknown> {
  const g: Record<string, unknown> = {};
  if (req.temperature != null) g.temperature = req.temperature;
  if (req.top_p != null) g.topP = req.top_p;
  const max = req.max_completion_tokens ?? req.max_tokens;
  if (max != null) g.maxOutputTokens = max;
  const stop = req.stop == null ? [] : typeof req.stop === 'string' ? [req.stop] : req.stop;
  if (stop.length) g.stopSequences = [...stop];
  if (req.presence_penalty != null) g.presencePenalty = req.presence_penalty;
  if (req.frequency_penalty != null) g.frequencyPenalty = req.frequency_penalty;
  if (typeof req.seed === 'number') g.seed = req.seed;
  const format = req.response_format as { type?: unknown; json_schema?: { schema?: unknown } } | undefined;
  if (format?.type === 'json_object') g.responseMimeType = 'application/json';
  else if (format?.type === 'json_schema') {
    g.responseMimeType = 'application/json';
    if (format.json_schema?.schema !== undefined) g.responseJsonSchema = format.json_schema.schema;
  }
  const effort = typeof req.reasoning_effort === 'string' ? EFFORT_BUDGETS[req.reasoning_effort] : undefined;
  if (effort !== undefined) g.thinkingConfig = { thinkingBudget: effort, includeThoughts: true };
  return g;
}
