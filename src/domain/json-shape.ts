/**
 * Bounds on the shape of a JSON body, checked on its text before it is parsed: one pass over the characters, no
 * allocation, so an array of a million elements or an object nested a hundred thousand deep is refused in
 * milliseconds instead of being parsed, validated and serialised (seconds of a blocked event loop, a stack overflow).
 */

export interface JsonShapeLimits {
  /** Deepest nesting of arrays and objects. */
  maxDepth: number;
  /** Most elements in any one array. */
  maxArrayLength: number;
}

/** Deep enough for any tool schema or content tree seen in practice; far below what exhausts a stack. */
export const DEFAULT_JSON_LIMITS: JsonShapeLimits = { maxDepth: 64, maxArrayLength: 10_000 };

export type JsonShapeProblem = { kind: 'depth'; limit: number } | { kind: 'array'; limit: number };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

/**
 * The first limit the text exceeds, or undefined. Malformed JSON is not judged here (the parser refuses it); the scan
 * only counts brackets and commas outside strings, so it never reads past the text.
 */
export function jsonShapeProblem(text: string, limits: JsonShapeLimits): JsonShapeProblem | undefined {
  // Per open container: -1 for an object, else the elements counted so far in that array (commas + 1 once non-empty).
  const counts: number[] = [];
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    switch (c) {
      case QUOTE:
        inString = true;
        markElement(counts);
        break;
      case OPEN_ARRAY:
      case OPEN_OBJECT:
        markElement(counts);
        if (counts.length >= limits.maxDepth) return { kind: 'depth', limit: limits.maxDepth };
        counts.push(c === OPEN_ARRAY ? 0 : -1);
        break;
      case CLOSE_ARRAY:
      case CLOSE_OBJECT:
        counts.pop();
        break;
      case COMMA: {
        const top = counts.length - 1;
        if (top >= 0 && counts[top] >= 0 && ++counts[top] > limits.maxArrayLength) return { kind: 'array', limit: limits.maxArrayLength };
        break;
      }
      default:
        // A number, true, false or null starts an element too.
        if (c > 0x20) markElement(counts);
    }
  }
  return undefined;
}

/** The innermost array, if empty so far, now holds its first element. */
function markElement(counts: number[]): void {
  const top = counts.length - 1;
  if (top >= 0 && counts[top] === 0) counts[top] = 1;
}
