import { countJsonTokens, countTokens, truncateTokens } from './tokens';

/**
 * What the simulated model answers, shared by both wire formats. Deterministic: the same request
 * always gets the same answer.
 *
 * - Text: `This is a simulated answer to: <the last user text, whitespace collapsed, first 200 chars>`,
 *   or after a tool result `The tool returned: <result>`; cut at the first stop sequence, then at
 *   `maxTokens` (finish `length`).
 * - A tool call when tools are given and: the tool choice names a function; or it is `required` (the tool the
 *   last user text names, else the first); or it is `auto` (the default), the last message is a user message
 *   (not a tool result), and that message asks for one with the marker `[[tool]]` (the first tool) or
 *   `[[tool:NAME]]` (with `[[tool:NAME ARGUMENTS]]`, those arguments), or says "weather" and a tool's name or description does. Nothing else triggers a tool, so
 *   an agent (Claude Code, Codex), whose prompts name its tools all the time, gets a text answer and finishes.
 *   Arguments are built from the tool's JSON schema (see `exampleArguments`).
 */
export interface ToolSpec {
  name: string;
  description?: string;
  /** JSON schema of the arguments (OpenAI `parameters`, Anthropic `input_schema`). */
  schema?: unknown;
}

export type ToolMode = { mode: 'auto' } | { mode: 'none' } | { mode: 'required' } | { mode: 'named'; name: string };

export interface AnswerInput {
  /** Text of the last message (user text, or the tool result when `afterToolResult`). */
  lastText: string;
  afterToolResult: boolean;
  /** Images in the last message: mentioned in the answer. */
  images: number;
  tools: ToolSpec[];
  toolMode: ToolMode;
  maxTokens?: number;
  stop?: string[];
  /** Structured output asked for: the answer is a JSON value built from this JSON Schema (see `exampleArguments`). */
  jsonSchema?: unknown;
}

export type Answer =
  | { kind: 'text'; text: string; finish: 'stop' | 'length' | 'stop_sequence'; stopSequence: string | null; tokens: number }
  | { kind: 'tool'; name: string; args: Record<string, unknown>; argsJson: string; tokens: number; input: string };

const SNIPPET_CHARS = 200;

export function planAnswer(a: AnswerInput): Answer {
  const tool = chooseTool(a);
  if (tool) {
    const given = markerArguments(a.lastText, tool.name);
    const args = given?.args ?? exampleArguments(tool.schema, a.lastText);
    const argsJson = JSON.stringify(args);
    return { kind: 'tool', name: tool.name, args, argsJson, tokens: countTokens(tool.name) + countJsonTokens(args), input: given?.raw ?? argsJson };
  }
  let text = answerText(a);
  let finish: 'stop' | 'length' | 'stop_sequence' = 'stop';
  let stopSequence: string | null = null;
  if (a.stop?.length) {
    let at = -1;
    for (const s of a.stop) {
      const i = s ? text.indexOf(s) : -1;
      if (i >= 0 && (at < 0 || i < at)) { at = i; stopSequence = s; }
    }
    if (at >= 0) { text = text.slice(0, at); finish = 'stop_sequence'; }
  }
  if (a.maxTokens !== undefined) {
    const t = truncateTokens(text, a.maxTokens);
    if (t.cut) { text = t.text; finish = 'length'; stopSequence = null; }
  }
  return { kind: 'text', text, finish, stopSequence, tokens: countTokens(text) };
}

function answerText(a: AnswerInput): string {
  if (a.jsonSchema !== undefined) return JSON.stringify(exampleArguments(a.jsonSchema, a.lastText));
  const snippet = a.lastText.replace(/\s+/g, ' ').trim().slice(0, SNIPPET_CHARS);
  const images = a.images > 0 ? ` I see ${a.images} image${a.images === 1 ? '' : 's'}.` : '';
  if (a.afterToolResult) return `The tool returned: ${snippet}`;
  return snippet ? `This is a simulated answer to: ${snippet}${images}` : `This is a simulated answer.${images}`;
}

function chooseTool(a: AnswerInput): ToolSpec | undefined {
  if (a.tools.length === 0) return undefined;
  const m = a.toolMode;
  if (m.mode === 'none') return undefined;
  if (m.mode === 'named') return a.tools.find((t) => t.name === m.name) ?? { name: m.name };
  const text = a.lastText.toLowerCase();
  const named = a.tools.find((t) => {
    const n = t.name.toLowerCase();
    return text.includes(n) || text.includes(n.replace(/_/g, ' '));
  });
  if (m.mode === 'required') return named ?? a.tools[0];
  if (a.afterToolResult) return undefined;
  const marker = TOOL_MARKER.exec(a.lastText);
  if (marker) return marker[1] ? (a.tools.find((t) => namedBy(t.name, marker[1])) ?? a.tools[0]) : a.tools[0];
  if (text.includes('weather')) {
    const w = a.tools.find((t) => `${t.name} ${t.description ?? ''}`.toLowerCase().includes('weather'));
    if (w) return w;
  }
  return undefined;
}

/**
 * Whether a marker's NAME means this tool: its name, or its last part after `__` (a namespaced tool as a chat
 * translation names it, `functions__exec`).
 */
function namedBy(tool: string, name: string): boolean {
  return tool === name || tool.endsWith(`__${name}`);
}

/** `[[tool]]`, `[[tool:NAME]]` or `[[tool:NAME ARGUMENTS]]` (the arguments run to the closing `]]`). */
const TOOL_MARKER = /\[\[tool(?::([^\]\s]+))?(?:\s+([\s\S]*?))?\]\]/;

/**
 * The arguments a `[[tool:NAME ARGUMENTS]]` marker gives for the chosen tool: a JSON object as the arguments, any
 * other text as `{input}` (and as a custom tool's raw input), so a scripted prompt decides exactly what the agent runs.
 */
function markerArguments(text: string, tool: string): { args: Record<string, unknown>; raw: string } | undefined {
  const m = TOOL_MARKER.exec(text);
  if (!m || m[2] === undefined || (m[1] !== undefined && !namedBy(tool, m[1]))) return undefined;
  const raw = m[2].trim();
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return { args: parsed as Record<string, unknown>, raw };
  } catch {
    // not JSON: the raw text is the input
  }
  return { args: { input: raw }, raw };
}

/**
 * Arguments matching a JSON schema's properties (the `required` ones when listed, else all):
 * enum → its first value; string → a place named in the text ("in Paris") for location/city-like
 * names (default "San Francisco"), else "example"; number/integer → 1; boolean → true;
 * array → []; object → {}.
 */
export function exampleArguments(schema: unknown, text: string): Record<string, unknown> {
  const s = schema as { properties?: Record<string, { type?: string | string[]; enum?: unknown[] }>; required?: string[] } | undefined;
  const props = s && typeof s === 'object' && s.properties && typeof s.properties === 'object' ? s.properties : {};
  const names = Array.isArray(s?.required) && s.required.length ? s.required : Object.keys(props);
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const p = props[name] ?? {};
    const type = Array.isArray(p.type) ? p.type[0] : p.type;
    if (Array.isArray(p.enum) && p.enum.length) out[name] = p.enum[0];
    else if (type === 'number' || type === 'integer') out[name] = 1;
    else if (type === 'boolean') out[name] = true;
    else if (type === 'array') out[name] = [];
    else if (type === 'object') out[name] = {};
    else out[name] = /location|city|place|where/i.test(name) ? placeIn(text) : 'example';
  }
  return out;
}

function placeIn(text: string): string {
  const m = /\b(?:in|at|for)\s+([A-Z][A-Za-z]+(?:[ -][A-Z][A-Za-z]+)*)/.exec(text);
  return m ? m[1] : 'San Francisco';
}
