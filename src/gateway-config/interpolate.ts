/**
 * `${VAR}` interpolation over a parsed config tree (not over the file's text, so a value with `:` or `#` in
 * it cannot change the document's structure). Only string values are interpolated, never mapping keys.
 *
 *  - `${NAME}` (NAME = letters, digits and _, not starting with a digit) is replaced by the variable's value;
 *    a variable that is unset or empty is a problem naming the variable.
 *  - `$${` is a literal `${` (so `$${NAME}` reads `${NAME}`).
 *  - Any other `${` is a problem. A `$` not followed by `{` is kept as is.
 *
 * Problems and messages never contain a value: neither the variable's nor the string's.
 */
export type PathSegment = string | number;

export interface InterpolationProblem {
  path: PathSegment[];
  message: string;
}

export interface InterpolationResult {
  /** The tree with every string interpolated; a string with a problem becomes ''. */
  value: unknown;
  problems: InterpolationProblem[];
  /** Every value that came from the environment, and every string that had one substituted in. */
  secrets: Set<string>;
}

const REFERENCE = /\$\$\{|\$\{([^}]*)\}?/g;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function interpolateString(
  text: string,
  env: NodeJS.ProcessEnv,
): { value: string; problems: string[]; substituted: string[] } {
  const problems: string[] = [];
  const substituted: string[] = [];
  const value = text.replace(REFERENCE, (match: string, name: string | undefined) => {
    if (match === '$${') return '${';
    if (!match.endsWith('}') || name === undefined || !VAR_NAME.test(name)) {
      problems.push('has a malformed ${...} reference: write ${NAME} with NAME made of letters, digits and _, or $${ for a literal ${');
      return '';
    }
    const v = env[name];
    if (v === undefined || v === '') {
      problems.push(`environment variable ${name} is not set`);
      return '';
    }
    substituted.push(v);
    return v;
  });
  return { value, problems, substituted };
}

/** Interpolates every string in a JSON-like tree (plain objects, arrays, scalars). */
export function interpolate(tree: unknown, env: NodeJS.ProcessEnv): InterpolationResult {
  const problems: InterpolationProblem[] = [];
  const secrets = new Set<string>();

  function walk(node: unknown, path: PathSegment[]): unknown {
    if (typeof node === 'string') {
      if (!node.includes('$')) return node;
      const r = interpolateString(node, env);
      for (const message of r.problems) problems.push({ path, message });
      if (r.problems.length > 0) return '';
      if (r.substituted.length > 0) {
        for (const s of r.substituted) secrets.add(s);
        secrets.add(r.value);
      }
      return r.value;
    }
    if (Array.isArray(node)) return node.map((item, i) => walk(item, [...path, i]));
    if (node !== null && typeof node === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(node)) {
        // defineProperty: a '__proto__' key stays an ordinary (and later rejected) field.
        Object.defineProperty(out, k, { value: walk(v, [...path, k]), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    return node;
  }

  return { value: walk(tree, []), problems, secrets };
}
