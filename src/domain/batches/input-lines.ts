import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { DEFAULT_JSON_LIMITS, type JsonShapeLimits, jsonShapeProblem } from '../json-shape';

/**
 * An OpenAI batch input file, line by line: `{custom_id, method: "POST", url: <the batch's endpoint>, body}`. Every
 * problem names its line (1-based), as OpenAI's `errors.data[]` does; one problem fails the whole batch before any
 * line is sent.
 */

export interface InputLine {
  idx: number;
  customId: string;
  body: Record<string, unknown>;
}

export interface LineProblem {
  code: string;
  message: string;
  param: string | null;
  line: number;
}

/** Longest custom_id kept (it is part of the line's business key in the ledger). */
export const MAX_CUSTOM_ID_LENGTH = 512;

/** At most this many problems are reported; the file is read no further once there are. */
export const MAX_PROBLEMS = 100;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The first string (a value or a key) PostgreSQL could not store in a jsonb or text column: a NUL character, or a lone
 * UTF-16 surrogate (`\ud800`, valid JSON but no Unicode character). Only called on a line whose depth was bounded.
 */
export function unstorableString(value: unknown): 'nul' | 'surrogate' | null {
  if (typeof value === 'string') return value.includes('\u0000') ? 'nul' : LONE_SURROGATE.test(value) ? 'surrogate' : null;
  if (typeof value !== 'object' || value === null) return null;
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = unstorableString(item);
      if (found) return found;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    const found = unstorableString(k) ?? unstorableString(v);
    if (found) return found;
  }
  return null;
}

export function checkLine(text: string, line: number, endpoint: string, seen: Set<string>, limits: JsonShapeLimits = DEFAULT_JSON_LIMITS): Omit<InputLine, 'idx'> | LineProblem {
  // Bounded as a request body is, before it is parsed: a line nested thousands deep would exhaust the stack later.
  const shape = jsonShapeProblem(text, limits);
  if (shape?.kind === 'depth') {
    return { code: 'invalid_json_line', message: `Line ${line} nests arrays and objects more than ${shape.limit} levels deep.`, param: null, line };
  }
  if (shape?.kind === 'array') {
    return { code: 'invalid_json_line', message: `Line ${line} has an array of more than ${shape.limit} elements.`, param: null, line };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { code: 'invalid_json_line', message: `Line ${line} is not valid JSON.`, param: null, line };
  }
  if (!isObject(parsed)) return { code: 'invalid_json_line', message: `Line ${line} is not a JSON object.`, param: null, line };
  const unstorable = unstorableString(parsed);
  if (unstorable) {
    const what = unstorable === 'nul' ? 'a NUL character (\\u0000)' : 'a lone UTF-16 surrogate (not a Unicode character)';
    return { code: 'invalid_json_line', message: `Line ${line} has a string with ${what}, which cannot be stored.`, param: null, line };
  }
  const { custom_id: customId, method, url, body } = parsed;
  if (typeof customId !== 'string' || customId === '') {
    return { code: 'missing_required_parameter', message: `Line ${line} has no custom_id.`, param: 'custom_id', line };
  }
  if (customId.length > MAX_CUSTOM_ID_LENGTH) {
    return { code: 'invalid_custom_id', message: `Line ${line}: custom_id is longer than ${MAX_CUSTOM_ID_LENGTH} characters.`, param: 'custom_id', line };
  }
  if (seen.has(customId)) {
    return { code: 'duplicate_custom_id', message: `Line ${line}: the custom_id '${customId.slice(0, 64)}' is used by an earlier line.`, param: 'custom_id', line };
  }
  if (method !== 'POST') return { code: 'invalid_method', message: `Line ${line}: method must be POST.`, param: 'method', line };
  if (url !== endpoint) {
    return { code: 'invalid_url', message: `Line ${line}: url must be the batch's endpoint, ${endpoint}.`, param: 'url', line };
  }
  if (!isObject(body)) return { code: 'invalid_request', message: `Line ${line}: body must be a JSON object.`, param: 'body', line };
  seen.add(customId);
  return { customId, body };
}

/**
 * Reads the file and hands its lines to `take` in groups (blank lines skipped); resolves with the problems found
 * (none: every line was taken) and the number of lines.
 */
export async function readInputLines(
  stream: Readable,
  endpoint: string,
  maxLines: number,
  take: (lines: InputLine[]) => Promise<void>,
  groupSize = 1000,
  limits: JsonShapeLimits = DEFAULT_JSON_LIMITS,
): Promise<{ problems: LineProblem[]; count: number }> {
  const problems: LineProblem[] = [];
  const seen = new Set<string>();
  let group: InputLine[] = [];
  let lineNo = 0;
  let count = 0;
  const reader = createInterface({ input: stream, crlfDelay: Infinity });
  try {
    for await (const text of reader) {
      lineNo++;
      if (text.trim() === '') continue;
      count++;
      if (count > maxLines) {
        problems.push({ code: 'too_many_tasks', message: `The input file has more than ${maxLines} lines.`, param: null, line: lineNo });
        break;
      }
      const r = checkLine(text, lineNo, endpoint, seen, limits);
      if ('code' in r) {
        problems.push(r);
        if (problems.length >= MAX_PROBLEMS) break;
        continue;
      }
      if (problems.length > 0) continue;
      group.push({ idx: count - 1, ...r });
      if (group.length >= groupSize) {
        await take(group);
        group = [];
      }
    }
  } finally {
    reader.close();
    stream.destroy();
  }
  if (count === 0) problems.push({ code: 'empty_file', message: 'The input file has no lines.', param: null, line: 0 });
  if (problems.length === 0 && group.length > 0) await take(group);
  return { problems, count };
}
