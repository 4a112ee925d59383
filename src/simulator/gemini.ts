import { planAnswer, type Answer, type ToolMode, type ToolSpec } from './answers';
import { digest } from './hash';
import { vector } from './openai-embeddings';
import { json, sse } from './reply';
import { countJsonTokens, countTokens, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, PROMPT_OVERHEAD_TOKENS, splitTokens } from './tokens';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject } from './validate';

/**
 * The Gemini API: `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`, `:countTokens`,
 * `:embedContent` and `:batchEmbedContents`, errors as `{error: {code, message, status}}`. Answers come from the
 * same planner as the other wire formats. Like Gemini 3, a `gemini-3*` model signs each function call
 * (`thoughtSignature`) and refuses a later turn whose function call comes back without its signature; thinking
 * (any `thinkingConfig` whose budget is not 0) costs THOUGHT_TOKENS, reported as `thoughtsTokenCount`. Stream chunks
 * carry running usage totals, as Gemini's do.
 */

/** Thinking tokens a thinking request reports. */
export const THOUGHT_TOKENS = 8;

const STATUS: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE' };

export function geminiError(status: number, message: string): Reply {
  return json(status, { error: { code: status, message, status: STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT') } });
}

type Part = Record<string, unknown>;

function partsOf(content: unknown): Part[] {
  return isObject(content) && Array.isArray(content.parts) ? content.parts.filter(isObject) : [];
}

function field(o: Record<string, unknown>, camel: string): unknown {
  return o[camel] ?? o[camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];
}

/** The signature the simulator gives a function call: derived from its name and arguments. */
function signatureOf(name: string, args: unknown): string {
  return digest('thought', name, JSON.stringify(args ?? {})).toString('base64');
}

function validate(body: unknown, model: string, strict: boolean): Reply | undefined {
  if (!isObject(body)) return geminiError(400, 'The request body must be a JSON object.');
  if (!Array.isArray(body.contents) || body.contents.length === 0) return geminiError(400, '* GenerateContentRequest.contents: contents is not specified');
  for (const [i, c] of body.contents.entries()) {
    if (!isObject(c) || !Array.isArray(c.parts)) return geminiError(400, `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`);
    if (model.startsWith('gemini-3') && c.role === 'model') {
      for (const p of partsOf(c)) {
        if (field(p, 'functionCall') && typeof field(p, 'thoughtSignature') !== 'string') {
          return geminiError(400, `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly (contents[${i}]).`);
        }
      }
    }
  }
  const problem = checkModel(model, 'chat', strict);
  return problem ? geminiError(problem.status ?? 400, problem.message ?? 'Invalid model.') : undefined;
}

/** Lower-cases Gemini's OpenAPI types, so the planner reads the schema as JSON Schema. */
function jsonSchema(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(jsonSchema);
  if (!isObject(s)) return s;
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, k === 'type' && typeof v === 'string' ? v.toLowerCase() : isObject(v) || Array.isArray(v) ? jsonSchema(v) : v]));
}

function toolSpecs(tools: unknown): ToolSpec[] {
  const out: ToolSpec[] = [];
  for (const t of Array.isArray(tools) ? tools.filter(isObject) : []) {
    const decls = field(t, 'functionDeclarations');
    for (const d of Array.isArray(decls) ? decls.filter(isObject) : []) {
      if (typeof d.name !== 'string') continue;
      out.push({ name: d.name, description: typeof d.description === 'string' ? d.description : undefined, schema: jsonSchema(field(d, 'parametersJsonSchema') ?? d.parameters) });
    }
  }
  return out;
}

function toolMode(config: unknown): ToolMode {
  const fc = isObject(config) ? field(config, 'functionCallingConfig') : undefined;
  if (!isObject(fc)) return { mode: 'auto' };
  const mode = String(fc.mode ?? '').toUpperCase();
  if (mode === 'NONE') return { mode: 'none' };
  if (mode === 'ANY') {
    const names = field(fc, 'allowedFunctionNames');
    return Array.isArray(names) && names.length === 1 && typeof names[0] === 'string' ? { mode: 'named', name: names[0] } : { mode: 'required' };
  }
  return { mode: 'auto' };
}

function textOfParts(parts: Part[]): { text: string; images: number; responses: number } {
  let text = '';
  let images = 0;
  let responses = 0;
  for (const p of parts) {
    if (typeof p.text === 'string' && p.thought !== true) text += (text ? '\n' : '') + p.text;
    if (field(p, 'inlineData') || field(p, 'fileData')) images++;
    const fr = field(p, 'functionResponse');
    if (isObject(fr)) {
      responses++;
      // A response that is one string (`{output}`, `{result}`) reads as that string, as a model reads it.
      const values = isObject(fr.response) ? Object.values(fr.response) : [];
      text += (text ? '\n' : '') + (values.length === 1 && typeof values[0] === 'string' ? values[0] : JSON.stringify(fr.response ?? {}));
    }
  }
  return { text, images, responses };
}

function promptTokens(body: Record<string, unknown>): number {
  let n = PROMPT_OVERHEAD_TOKENS;
  const system = field(body, 'systemInstruction');
  if (typeof system === 'string') n += countTokens(system);
  else n += countTokens(textOfParts(partsOf(system)).text);
  for (const c of body.contents as unknown[]) {
    const parts = partsOf(c);
    const t = textOfParts(parts);
    n += MESSAGE_OVERHEAD_TOKENS + countTokens(t.text) + t.images * IMAGE_TOKENS;
    for (const p of parts) if (field(p, 'functionCall')) n += countJsonTokens(field(p, 'functionCall'));
  }
  if (Array.isArray(body.tools) && body.tools.length) n += countJsonTokens(body.tools);
  return n;
}

function thinks(body: Record<string, unknown>): boolean {
  const tc = field(isObject(body.generationConfig) ? body.generationConfig : {}, 'thinkingConfig');
  return isObject(tc) && field(tc, 'thinkingBudget') !== 0;
}

function plan(body: Record<string, unknown>): Answer {
  const contents = body.contents as unknown[];
  const last = contents[contents.length - 1];
  const t = textOfParts(partsOf(last));
  const g = isObject(body.generationConfig) ? body.generationConfig : {};
  const max = field(g, 'maxOutputTokens');
  const stop = field(g, 'stopSequences');
  return planAnswer({
    lastText: t.text,
    afterToolResult: t.responses > 0,
    images: t.images,
    tools: toolSpecs(body.tools),
    toolMode: toolMode(field(body, 'toolConfig')),
    maxTokens: typeof max === 'number' ? max : undefined,
    stop: Array.isArray(stop) ? stop.filter((s): s is string => typeof s === 'string') : undefined,
    jsonSchema: field(g, 'responseMimeType') === 'application/json' ? (jsonSchema(field(g, 'responseJsonSchema') ?? field(g, 'responseSchema')) ?? {}) : undefined,
  });
}

function callPart(model: string, a: Extract<Answer, { kind: 'tool' }>): Part {
  const part: Part = { functionCall: { name: a.name, args: a.args } };
  if (model.startsWith('gemini-3')) part.thoughtSignature = signatureOf(a.name, a.args);
  return part;
}

function usage(prompt: number, candidates: number, thoughts: number) {
  const u: Record<string, number> = { promptTokenCount: prompt, candidatesTokenCount: candidates, totalTokenCount: prompt + candidates + thoughts };
  if (thoughts) u.thoughtsTokenCount = thoughts;
  return u;
}

/** `/v1beta/models/{model}:{action}` (and `/v1/models/...`) for one model and action. */
export function geminiAction(model: string, action: string): (ctx: HandlerContext) => Reply {
  switch (action) {
    case 'generateContent':
      return (ctx) => generate(ctx, model, false);
    case 'streamGenerateContent':
      return (ctx) => generate(ctx, model, true);
    case 'countTokens':
      return (ctx) => {
        const body = isObject(ctx.body) && isObject(ctx.body.generateContentRequest) ? ctx.body.generateContentRequest : ctx.body;
        return validate(body, model, ctx.strictModels) ?? json(200, { totalTokens: promptTokens(body as Record<string, unknown>) });
      };
    case 'embedContent':
      return (ctx) => embed(ctx, model, false);
    case 'batchEmbedContents':
      return (ctx) => embed(ctx, model, true);
    default:
      return () => geminiError(404, `Method ${action} is not found for model ${model}.`);
  }
}

function generate(ctx: HandlerContext, model: string, stream: boolean): Reply {
  const bad = validate(ctx.body, model, ctx.strictModels);
  if (bad) return bad;
  const body = ctx.body as Record<string, unknown>;
  const a = plan(body);
  const prompt = promptTokens(body);
  const thoughts = thinks(body) ? THOUGHT_TOKENS : 0;
  const id = ctx.id('');
  const finishReason = a.kind === 'text' && a.finish === 'length' ? 'MAX_TOKENS' : 'STOP';
  const chunk = (parts: Part[], candidates: number, finish?: string) => ({
    candidates: [{ content: { role: 'model', parts }, ...(finish ? { finishReason: finish } : {}), index: 0 }],
    usageMetadata: usage(prompt, candidates, thoughts),
    modelVersion: model,
    responseId: id,
  });
  if (!stream) return json(200, chunk(a.kind === 'text' ? [{ text: a.text }] : [callPart(model, a)], a.tokens, finishReason));
  if (a.kind === 'tool') return sse([`data: ${JSON.stringify(chunk([callPart(model, a)], a.tokens, finishReason))}\r\n\r\n`]);
  const pieces = splitTokens(a.text, ctx.streamChunks);
  let sent = 0;
  return sse(
    pieces.map((piece, i) => {
      sent += countTokens(piece);
      const last = i === pieces.length - 1;
      return `data: ${JSON.stringify(chunk([{ text: piece }], last ? a.tokens : sent, last ? finishReason : undefined))}\r\n\r\n`;
    }),
  );
}

function embed(ctx: HandlerContext, model: string, batch: boolean): Reply {
  const body = ctx.body;
  if (!isObject(body)) return geminiError(400, 'The request body must be a JSON object.');
  const requests = batch ? body.requests : [body];
  if (!Array.isArray(requests) || requests.length === 0) return geminiError(400, '* BatchEmbedContentsRequest.requests: requests is not specified');
  const problem = checkModel(model, 'embedding', ctx.strictModels);
  if (problem) return geminiError(problem.status ?? 400, problem.message ?? 'Invalid model.');
  const embeddings = requests.map((r: unknown) => {
    const content = isObject(r) ? r.content : undefined;
    const dims = isObject(r) && typeof field(r, 'outputDimensionality') === 'number' ? (field(r, 'outputDimensionality') as number) : 16;
    return { values: Array.from(vector(textOfParts(partsOf(content)).text, dims)) };
  });
  return json(200, batch ? { embeddings } : { embedding: embeddings[0] });
}
