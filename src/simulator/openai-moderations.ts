import { openaiError } from './errors';
import { digest } from './hash';
import { json } from './reply';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject, type Problem } from './validate';

const CATEGORIES = [
  'harassment', 'harassment/threatening', 'hate', 'hate/threatening', 'illicit', 'illicit/violent', 'self-harm',
  'self-harm/intent', 'self-harm/instructions', 'sexual', 'sexual/minors', 'violence', 'violence/graphic',
] as const;
/** The categories OpenAI's omni model also judges on images; the others read text only. */
const IMAGE_CATEGORIES: ReadonlySet<string> = new Set(['self-harm', 'self-harm/intent', 'self-harm/instructions', 'sexual', 'violence', 'violence/graphic']);
/** The simulator's one rule for harm: the word "kill" (any case) flags violence. */
const FLAG_WORD = /\bkill\b/i;
const DEFAULT_MODEL = 'omni-moderation-latest';

/** One thing to judge: a string, or the parts of one multimodal input. */
interface Item {
  text: string;
  images: string[];
}

/**
 * POST /v1/moderations: one result per input string, one for a multimodal parts array. A text with the word
 * "kill" is flagged as violence (score 0.9 and up); every other score is a small number derived from the input
 * (below 0.01), so the same input gives the same answer. Image parts are scored, never flagged.
 */
export function moderations(ctx: HandlerContext): Reply {
  const body = ctx.body;
  if (!isObject(body)) return openaiError(400, { message: 'The request body must be a JSON object.' });
  const model = body.model === undefined || body.model === null ? DEFAULT_MODEL : body.model;
  if (typeof model !== 'string' || !model) return openaiError(400, { message: "Invalid type for 'model': expected a non-empty string.", param: 'model', code: 'invalid_type' });
  const items = parseInput(body.input);
  if ('problem' in items) return openaiError(400, items.problem);
  const modelProblem = checkModel(model, 'moderation', ctx.strictModels);
  if (modelProblem) return openaiError(modelProblem.status ?? 400, modelProblem);
  if (model.startsWith('text-moderation') && items.list.some((i) => i.images.length > 0)) {
    return openaiError(400, { message: `The model \`${model}\` does not accept images; use omni-moderation-latest.`, param: 'input', code: 'invalid_value' });
  }
  const id = `modr-${digest('moderation', model, JSON.stringify(body.input)).toString('hex').slice(0, 24)}`;
  return json(200, { id, model, results: items.list.map(result) });
}

function result(item: Item) {
  const seed = digest('moderation-scores', item.text, ...item.images);
  const flagged = FLAG_WORD.test(item.text);
  const categories: Record<string, boolean> = {};
  const scores: Record<string, number> = {};
  const applied: Record<string, string[]> = {};
  CATEGORIES.forEach((c, i) => {
    // Two digest bytes per category: a score below 0.01 with 6 significant decimals.
    const small = (seed.readUInt16BE(i * 2) + 1) / 6553600;
    const hit = flagged && c === 'violence';
    categories[c] = hit;
    scores[c] = Math.round((hit ? 0.9 + small * 9 : small) * 1e6) / 1e6 || 0.000001;
    const types: string[] = [];
    if (item.text) types.push('text');
    if (item.images.length && IMAGE_CATEGORIES.has(c)) types.push('image');
    applied[c] = types;
  });
  return { flagged, categories, category_scores: scores, category_applied_input_types: applied };
}

function parseInput(input: unknown): { list: Item[] } | { problem: Problem } {
  const invalid = { problem: { message: "Invalid 'input': expected a string, an array of strings, or an array of {type:'text', text} / {type:'image_url', image_url:{url}} parts.", param: 'input', code: 'invalid_value' } };
  if (input === undefined || input === null) return { problem: { message: "Missing required parameter: 'input'.", param: 'input', code: 'missing_required_parameter' } };
  if (typeof input === 'string') return { list: [{ text: input, images: [] }] };
  if (!Array.isArray(input) || input.length === 0) return invalid;
  if (input.every((s) => typeof s === 'string')) return { list: (input as string[]).map((text) => ({ text, images: [] })) };
  const item: Item = { text: '', images: [] };
  for (const part of input) {
    if (isObject(part) && part.type === 'text' && typeof part.text === 'string') item.text += (item.text ? '\n' : '') + part.text;
    else if (isObject(part) && part.type === 'image_url' && isObject(part.image_url) && typeof part.image_url.url === 'string') item.images.push(part.image_url.url);
    else return invalid;
  }
  return { list: [item] };
}
