import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseDocument } from 'yaml';
import { interpolate } from './interpolate';
import { type GatewayConfig, formatPath, validateGatewayConfig } from './schema';

/** Every problem of a gateway config file, one `path: message` line each; never contains a secret. */
export class GatewayConfigError extends Error {
  constructor(
    public readonly problems: string[],
    public readonly source: string,
  ) {
    super(`Invalid gateway config ${source}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'GatewayConfigError';
  }
}

/** The largest config file read: a mistake (a log file named by accident), not a config, beyond it. */
export const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, Math.max(0, offset));
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `line ${line}, column ${column}`;
}

const YAML_ERRORS: Record<string, string> = {
  DUPLICATE_KEY: 'duplicate key',
  BAD_INDENT: 'bad indentation',
  TAB_AS_INDENT: 'tabs are not allowed as indentation',
  MISSING_CHAR: 'missing character (an unclosed quote, bracket or brace?)',
  MULTILINE_IMPLICIT_KEY: 'a key must be on a single line (a missing ": "?)',
  BLOCK_AS_IMPLICIT_KEY: 'nested mapping in a compact mapping (a missing line break or ": "?)',
  UNEXPECTED_TOKEN: 'unexpected token',
  ALIAS_PROPS: 'an alias cannot have a tag or anchor',
  BAD_ALIAS: 'unknown or invalid alias',
  TAG_RESOLVE_FAILED: 'unknown tag',
};

/**
 * Parses YAML (any extension) or JSON (.json). Parser messages are replaced by our own, with a line and a
 * column: theirs quote the source text, which may hold a secret.
 */
function parseText(text: string, source: string, json: boolean): { ok: true; tree: unknown } | { ok: false; problems: string[] } {
  if (json) {
    try {
      return { ok: true, tree: JSON.parse(text) };
    } catch {
      // JSON.parse names no position in every Node version; YAML (a superset of JSON) usually finds it.
      const err = parseDocument(text, { prettyErrors: false }).errors[0];
      return { ok: false, problems: [`${source}: not valid JSON${err ? ` (${lineColumn(text, err.pos[0])})` : ''}`] };
    }
  }
  const doc = parseDocument(text, { prettyErrors: false, merge: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map(
        (e) => `${source}: ${lineColumn(text, e.pos[0])}: invalid YAML: ${YAML_ERRORS[e.code] ?? e.code.toLowerCase().replace(/_/g, ' ')}`,
      ),
    };
  }
  return { ok: true, tree: doc.toJS({ maxAliasCount: 1000 }) };
}

/** Replaces every occurrence of a secret (of 4 characters or more) in a message: the last line of defence. */
function redact(messages: string[], secrets: Iterable<string>): string[] {
  const list = [...secrets].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  if (list.length === 0) return messages;
  return messages.map((m) => list.reduce((acc, s) => acc.split(s).join('<redacted>'), m));
}

/**
 * Parses, interpolates and validates config text. `source` names the file in messages and in the result.
 * Throws GatewayConfigError with every problem at once.
 */
export function parseGatewayConfig(
  text: string,
  opts: { source: string; format?: 'yaml' | 'json'; env?: NodeJS.ProcessEnv },
): GatewayConfig {
  const { source } = opts;
  const json = opts.format === 'json' || (opts.format === undefined && extname(source).toLowerCase() === '.json');
  const parsed = parseText(text, source, json);
  if (!parsed.ok) throw new GatewayConfigError(parsed.problems, source);

  const interpolated = interpolate(parsed.tree, opts.env ?? process.env);
  const secrets = new Set(interpolated.secrets);
  // Literal keys written in the file are secrets too.
  const tree = interpolated.value as { channels?: unknown };
  if (tree !== null && typeof tree === 'object' && Array.isArray(tree.channels)) {
    for (const c of tree.channels) {
      if (c && typeof c === 'object' && typeof (c as { key?: unknown }).key === 'string') secrets.add((c as { key: string }).key);
    }
  }

  const result = validateGatewayConfig(
    interpolated.value,
    source,
    interpolated.problems.map((p) => p.path),
  );
  const problems = [
    ...interpolated.problems.map((p) => `${formatPath(p.path)}: ${p.message}`),
    ...(result.ok ? [] : result.problems),
  ];
  if (problems.length > 0 || !result.ok) throw new GatewayConfigError(redact(problems, secrets), source);
  const warnings = redact(result.config.warnings, secrets);
  if (warnings.every((w, i) => w === result.config.warnings[i])) return result.config;
  return Object.freeze({ ...result.config, warnings: Object.freeze(warnings) as string[] });
}

/** Reads GATEWAY_CONFIG's file (YAML, or JSON when it ends in .json). Throws GatewayConfigError. */
export function loadGatewayConfig(path: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let text: string;
  try {
    const buf = readFileSync(path);
    if (buf.length > MAX_CONFIG_BYTES) throw new GatewayConfigError([`${path}: larger than ${MAX_CONFIG_BYTES} bytes`], path);
    text = buf.toString('utf8');
  } catch (err) {
    if (err instanceof GatewayConfigError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : `cannot be read (${code ?? 'error'})`;
    throw new GatewayConfigError([`${path}: ${reason}`], path);
  }
  return parseGatewayConfig(text.replace(/^\uFEFF/, ''), { source: path, env });
}
