import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { type Price, QUANTITY_PRICES, TOKEN_PRICE_FIELDS, type TokenPrices } from '../domain/pricing/cost';
import { type Decimal, decimal, isNegative, ONE } from '../domain/pricing/decimal';
import type { PathSegment } from './interpolate';

/**
 * The gateway config file (GATEWAY_CONFIG): channels (upstreams) and model prices. This module is the zod
 * schema of the file after `${VAR}` interpolation, the cross-field rules zod cannot express per field, and
 * the normalized, frozen GatewayConfig the rest of the code consumes. docs/gateway-config.md documents it.
 */

export const CHANNEL_TYPES = ['openai', 'anthropic', 'video-a', 'video-b', 'video-c', 'openai-video', 'cohere', 'jina', 'gemini', 'azure', 'vertex', 'bedrock'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

export const MODEL_KINDS = ['chat', 'embedding', 'image', 'video', 'speech', 'transcription', 'rerank', 'moderation'] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];

export const DEFAULT_GROUP = 'default';
export const DEFAULT_TIMEOUT_MS = 60_000;

export interface ChannelConfig {
  name: string;
  type: ChannelType;
  /** http(s) URL without a trailing slash. */
  base_url: string;
  /** Upstream credential; '' = none sent. Never log it. */
  key: string;
  models: string[];
  /** Higher is tried first. */
  priority: number;
  /** Share of traffic within one priority, >= 1. */
  weight: number;
  groups: string[];
  /** Our model id -> the upstream's model id (ids not listed are sent unchanged). */
  model_mapping: Record<string, string>;
  /** Upstream call timeout; for streams, the longest silence between two chunks. */
  timeout_ms: number;
  /** `openai` channels: the upstream has OpenAI's Responses API (`/responses`), so /v1/responses is relayed natively. */
  responses_api: boolean;
  /** `openai` and `anthropic` channels: batches of this channel's models go to the provider's own batch API. */
  batch_api: boolean;
  /** Extra headers sent on every upstream request of this channel (after the gateway's own, so they win). Never log them. */
  headers: Record<string, string>;
  /** `azure` channels: the data-plane API version of the deployment paths; undefined or 'v1' for the v1 API. */
  api_version?: string;
  /** `azure` channels: Entra ID client credentials, in place of `key` (sent as `api-key`). Never log them. */
  azure_ad?: AzureAdCredentials;
  /** `vertex` channels: the Google Cloud project, region and service-account key (null: application default credentials). */
  vertex?: VertexSettings;
  /** `bedrock` channels: the AWS region and static credentials (none: the SDK's default chain, or `key` as a Bedrock API key). */
  bedrock?: BedrockSettings;
}

export interface BedrockSettings {
  region: string;
  /** Never log them. */
  aws: { access_key_id: string; secret_access_key: string; session_token?: string } | null;
}

export interface VertexSettings {
  project: string;
  /** A region (us-east5) or `global`. */
  region: string;
  /** The service-account key's JSON text (from `credentials`, or read from `credentials_file`); never log it. */
  credentials: string | null;
  /** Where it came from, for messages: `credentials_file` path or 'credentials'. */
  credentialsSource: string | null;
}

export interface AzureAdCredentials {
  tenant_id: string;
  client_id: string;
  client_secret: string;
  /** https://login.microsoftonline.com unless the cloud is another (a sovereign cloud, or a stand-in in tests). */
  authority_host: string;
}

export interface ModelPrice extends Price {
  /** Reasoning-series model (o1, o3-mini...): refuses temperature, top_p and `system` messages. */
  reasoning: boolean;
  /**
   * The model can think when asked (a Gemini `thinkingConfig` reaches it as Anthropic's `thinking` or OpenAI's
   * `reasoning_effort`), with no restriction on its parameters. Given, or true for a reasoning-series model.
   */
  thinking: boolean;
  /** Given, or inferred: per_second -> video; per_unit -> video on a video-* channel, else image; tokens -> chat, or embedding without output_per_1m. */
  kind: ModelKind;
  /** `owned_by` in /v1/models when set. */
  owned_by?: string;
  /** The share of the price a line sent to a provider's batch API costs (0.5 when the config gives none). */
  batch_multiplier?: Decimal;
}

export interface GroupConfig {
  multiplier: Decimal;
  /** Defaults for the group's keys that set none of their own (0: no limit). */
  rpm_limit: number;
  tpm_limit: number;
  max_concurrency: number;
  /** Credits each key may spend per `quota_period` (0: none). */
  period_quota: number;
  quota_period: 'day' | 'week' | 'month' | null;
}

export interface GatewayConfig {
  /** Enabled channels only, in file order. */
  channels: ChannelConfig[];
  models: Record<string, ModelPrice>;
  groups: Record<string, GroupConfig>;
  /** Things that load but deserve an operator's look (unpriced models...). */
  warnings: string[];
  /** The file path, or 'built-in'. */
  source: string;
}

// ---------------------------------------------------------------------------------------------------------
// zod schema of the file (after interpolation)

const text = (what = 'a string') => z.string({ error: `must be ${what}` });
const nonEmpty = text().trim().min(1, 'must not be empty');
const whole = (min: number, max: number) =>
  z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(min, `must be between ${min} and ${max}`)
    .max(max, `must be between ${min} and ${max}`);

/** USD: a non-negative finite number, or a decimal string ('0.15') for more than 15 significant digits. */
const requiredMoney = z.unknown().transform((v, ctx): Decimal => {
  if (v === undefined || v === null) {
    ctx.addIssue({ code: 'custom', message: 'is required' });
    return z.NEVER;
  }
  if (typeof v !== 'number' && typeof v !== 'string') {
    ctx.addIssue({ code: 'custom', message: 'must be a number' });
    return z.NEVER;
  }
  let d: Decimal;
  try {
    d = decimal(v);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a finite decimal number, for example 0.15' });
    return z.NEVER;
  }
  if (isNegative(d)) {
    ctx.addIssue({ code: 'custom', message: 'must not be negative' });
    return z.NEVER;
  }
  return d;
});
const money = requiredMoney.optional();

function isHttpUrl(v: string): boolean {
  if (!URL.canParse(v)) return false;
  const u = new URL(v);
  return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
}

/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Framing and connection headers: the HTTP client sets them from the request itself. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect', 'proxy-connection']);

const channelSchema = z.strictObject(
  {
    name: nonEmpty.pipe(z.string().max(100, 'must be at most 100 characters')),
    type: z.enum(CHANNEL_TYPES, { error: `must be one of ${CHANNEL_TYPES.join(', ')}` }),
    // A cloud's channels may omit it: withCloudDefaults gives them their regional address first.
    base_url: text('an http:// or https:// URL')
      .trim()
      .refine(isHttpUrl, 'must be an http:// or https:// URL')
      .refine((v) => !URL.canParse(v) || (new URL(v).search === '' && new URL(v).hash === ''), 'must not have a query or fragment')
      .transform((v) => v.replace(/\/+$/, '')),
    project: nonEmpty.pipe(z.string().regex(/^[a-z][a-z0-9-]{4,61}[a-z0-9]$|^[a-z0-9.:-]{1,100}$/, 'must be a Google Cloud project id')).optional(),
    region: nonEmpty.pipe(z.string().regex(/^[a-z0-9-]{1,40}$/, 'must be a region such as us-east5, or global')).optional(),
    credentials_file: nonEmpty.optional(),
    aws: z
      .strictObject(
        { access_key_id: nonEmpty, secret_access_key: nonEmpty, session_token: nonEmpty.optional() },
        { error: 'must be a mapping of access_key_id, secret_access_key and session_token' },
      )
      .optional(),
    credentials: nonEmpty.optional(),
    key: text()
      .refine((v) => !/[\r\n\0]/.test(v), 'must not contain line breaks')
      .transform((v) => v.trim())
      .default(''),
    models: z.array(nonEmpty, { error: 'must be a list of model ids' }).min(1, 'must list at least one model'),
    priority: whole(-1_000_000, 1_000_000).default(0),
    weight: whole(1, 1_000_000).default(1),
    groups: z
      .array(nonEmpty, { error: 'must be a list of group names' })
      .min(1, 'must list at least one group')
      .default([DEFAULT_GROUP]),
    model_mapping: z.record(text(), nonEmpty, { error: 'must be a mapping of model id to upstream model id' }).default({}),
    timeout_ms: whole(100, 3_600_000).default(DEFAULT_TIMEOUT_MS),
    enabled: z.boolean({ error: 'must be true or false' }).default(true),
    responses_api: z.boolean({ error: 'must be true or false' }).default(false),
    batch_api: z.boolean({ error: 'must be true or false' }).default(false),
    api_version: nonEmpty.pipe(z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be an API version such as 2024-10-21, or v1')).optional(),
    azure_ad: z
      .strictObject(
        {
          tenant_id: nonEmpty.pipe(z.string().regex(/^[A-Za-z0-9.-]{1,128}$/, 'must be a tenant id or domain')),
          client_id: nonEmpty.pipe(z.string().max(128, 'must be at most 128 characters')),
          client_secret: nonEmpty,
          authority_host: text('an https:// URL')
            .trim()
            .refine(isHttpUrl, 'must be an http:// or https:// URL')
            .transform((v) => v.replace(/\/+$/, ''))
            .default('https://login.microsoftonline.com'),
        },
        { error: 'must be a mapping of tenant_id, client_id, client_secret and authority_host' },
      )
      .optional(),
    headers: z
      .record(z.string(), text().refine((v) => !/[\r\n\0]/.test(v), 'must not contain line breaks'), { error: 'must be a mapping of header name to value' })
      .superRefine((headers, ctx) => {
        for (const name of Object.keys(headers)) {
          if (!HEADER_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'must be an HTTP header name' });
          else if (RESERVED_HEADERS.has(name.toLowerCase())) ctx.addIssue({ code: 'custom', path: [name], message: 'is set by the gateway itself' });
        }
      })
      .default({}),
  },
  { error: 'must be a mapping' },
);

/** USD per 1M tokens by usage dimension (src/domain/pricing/cost.ts: TokenPrices, with the fallbacks). */
const tokenPriceFields = {
  input_per_1m: money,
  output_per_1m: money,
  cache_read_per_1m: money,
  cache_write_per_1m: money,
  cache_write_1h_per_1m: money,
  reasoning_per_1m: money,
  image_input_per_1m: money,
  audio_input_per_1m: money,
  audio_output_per_1m: money,
};

const modelSchema = z.strictObject(
  {
    ...tokenPriceFields,
    above_200k: z
      .strictObject(tokenPriceFields, { error: 'must be a mapping of token prices, for example {input_per_1m: 6, output_per_1m: 22.5}' })
      .optional(),
    per_unit: money,
    per_second: money,
    input_characters_per_1m: money,
    per_minute: money,
    per_search_unit: money,
    reasoning: z.boolean({ error: 'must be true or false' }).default(false),
    thinking: z.boolean({ error: 'must be true or false' }).optional(),
    batch_multiplier: money,
    kind: z.enum(MODEL_KINDS, { error: `must be one of ${MODEL_KINDS.join(', ')}` }).optional(),
    owned_by: nonEmpty.optional(),
  },
  { error: 'must be a mapping of prices, for example {input_per_1m: 0.15, output_per_1m: 0.6}' },
);

const limitField = z
  .number({ error: 'must be a whole number, 0 for no limit' })
  .int('must be a whole number, 0 for no limit')
  .min(0, 'must be 0 (no limit) or more')
  .max(1_000_000_000, 'must be at most 1000000000')
  .default(0);

const groupSchema = z.strictObject(
  {
    multiplier: requiredMoney.optional(),
    rpm_limit: limitField,
    tpm_limit: limitField,
    max_concurrency: limitField,
    period_quota: z
      .number({ error: 'must be a whole number of credits, 0 for none' })
      .int('must be a whole number of credits, 0 for none')
      .min(0, 'must be 0 (none) or more')
      .max(Number.MAX_SAFE_INTEGER, 'is too large')
      .default(0),
    quota_period: z.enum(['day', 'week', 'month'], { error: 'must be day, week or month' }).optional(),
  },
  { error: 'must be a mapping, for example {multiplier: 0.5, rpm_limit: 60}' },
).refine((g) => g.period_quota === 0 || g.quota_period !== undefined, { message: 'is required when period_quota is set', path: ['quota_period'] });

export const gatewayConfigFileSchema = z.strictObject(
  {
    channels: z.array(channelSchema, { error: 'must be a list of channels' }).min(1, 'must list at least one channel'),
    models: z.record(nonEmpty, modelSchema, { error: 'must be a mapping of model id to price' }).default({}),
    groups: z.record(nonEmpty, groupSchema, { error: 'must be a mapping of group name to {multiplier, rpm_limit, tpm_limit, max_concurrency}' }).default({}),
  },
  { error: 'must be a mapping with channels and models' },
);

export type GatewayConfigFile = z.infer<typeof gatewayConfigFileSchema>;
export type GatewayConfigFileInput = z.input<typeof gatewayConfigFileSchema>;
/** One entry of `models:` as written in the file. */
export type ModelPriceInput = z.input<typeof modelSchema>;

// ---------------------------------------------------------------------------------------------------------
// Paths and messages

/** channels[0].base_url, models["gpt-4.1"].input_per_1m; '(root)' for the document itself. */
export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (/^[A-Za-z0-9_-]+$/.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out === '' ? '(root)' : out;
}

interface Problem {
  path: PathSegment[];
  message: string;
}

function zodProblems(error: z.ZodError): Problem[] {
  const out: Problem[] = [];
  for (const issue of error.issues) {
    const path = issue.path.filter((p): p is PathSegment => typeof p !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: [...path, key], message: 'unknown field' });
    } else {
      out.push({ path, message: issue.message });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Cross-field rules, run on the raw tree so they are reported together with the per-field problems

const TOKEN_FIELDS = [...TOKEN_PRICE_FIELDS, 'above_200k'] as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Fields of one cloud's channels: refused on other types, and the credential rules of each cloud. */
function cloudFieldProblems(ch: Record<string, unknown>, i: number, files: KeyFiles): Problem[] {
  const out: Problem[] = [];
  const only: Record<string, string[]> = { azure: ['api_version', 'azure_ad'], vertex: ['project', 'credentials_file', 'credentials'], bedrock: ['aws'] };
  for (const [type, fields] of Object.entries(only)) {
    if (ch.type === type) continue;
    for (const f of fields) if (ch[f] !== undefined) out.push({ path: ['channels', i, f], message: `is for ${type} channels only` });
  }
  if (ch.region !== undefined && ch.type !== 'vertex' && ch.type !== 'bedrock') out.push({ path: ['channels', i, 'region'], message: 'is for vertex and bedrock channels only' });
  if (ch.type === 'bedrock') {
    if (ch.region === undefined) out.push({ path: ['channels', i, 'region'], message: 'is required for a bedrock channel (an AWS region such as us-east-1)' });
    if (ch.aws !== undefined && typeof ch.key === 'string' && ch.key.trim() !== '') out.push({ path: ['channels', i, 'aws'], message: 'give either aws (signed requests) or key (a Bedrock API key), not both' });
    return out;
  }
  if (ch.type === 'vertex') return [...out, ...vertexProblems(ch, i, files)];
  if (ch.type !== 'azure') return out;
  const key = typeof ch.key === 'string' ? ch.key.trim() : '';
  if (ch.azure_ad !== undefined && key !== '') out.push({ path: ['channels', i, 'azure_ad'], message: 'give either key (sent as api-key) or azure_ad, not both' });
  if (ch.azure_ad === undefined && key === '') out.push({ path: ['channels', i, 'key'], message: 'is required for an azure channel without azure_ad' });
  // Azure's Batch API takes files per deployment and a global-batch deployment type: not relayed yet.
  if (ch.batch_api === true) out.push({ path: ['channels', i, 'batch_api'], message: "is not supported on azure channels: their lines run through the gateway's own batches" });
  return out;
}

function vertexProblems(ch: Record<string, unknown>, i: number, files: KeyFiles): Problem[] {
  const out: Problem[] = [];
  if (ch.project === undefined) out.push({ path: ['channels', i, 'project'], message: 'is required for a vertex channel' });
  if (ch.region === undefined) out.push({ path: ['channels', i, 'region'], message: 'is required for a vertex channel (a region such as us-east5, or global)' });
  if (ch.credentials !== undefined && ch.credentials_file !== undefined) out.push({ path: ['channels', i, 'credentials'], message: 'give either credentials or credentials_file, not both' });
  if (typeof ch.key === 'string' && ch.key.trim() !== '') out.push({ path: ['channels', i, 'key'], message: 'is not used by vertex channels: give credentials, credentials_file, or neither for application default credentials' });
  const read = readServiceAccount(ch, files);
  if (read.problem) out.push({ path: ['channels', i, read.field], message: read.problem });
  return out;
}

/** The service-account key a vertex channel names, read and checked: never its content in a message. */
/** The key files one validation read, by path: checked and normalized from one read. */
type KeyFiles = Map<string, string>;

function readServiceAccount(ch: Record<string, unknown>, files: KeyFiles = new Map()): { json: string | null; field: string; problem?: string } {
  let text: string | null = null;
  let field = 'credentials';
  if (typeof ch.credentials_file === 'string') {
    field = 'credentials_file';
    try {
      const file = ch.credentials_file.trim();
      text = files.get(file) ?? readFileSync(file, 'utf8');
      files.set(file, text);
    } catch (err) {
      return { json: null, field, problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
    }
  } else if (typeof ch.credentials === 'string') {
    text = ch.credentials;
  } else {
    return { json: null, field };
  }
  let key: Record<string, unknown>;
  try {
    key = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { json: null, field, problem: 'is not a service-account key (not JSON)' };
  }
  const ok = key && key.type === 'service_account' && typeof key.client_email === 'string' && typeof key.private_key === 'string' && String(key.private_key).includes('PRIVATE KEY');
  if (!ok) return { json: null, field, problem: 'is not a service-account key (type service_account, client_email and private_key)' };
  if (key.token_uri !== undefined && (typeof key.token_uri !== 'string' || !isHttpUrl(key.token_uri))) return { json: null, field, problem: 'has a token_uri that is not an http(s) URL' };
  return { json: text, field };
}

/** A cloud channel's default address: Vertex AI's regional endpoint (or the global one). */
function cloudBaseUrl(c: Record<string, unknown>): string | undefined {
  const region = typeof c.region === 'string' && /^[a-z0-9-]{1,40}$/.test(c.region) ? c.region : undefined;
  if (c.type === 'bedrock') return `https://bedrock-runtime.${region ?? 'us-east-1'}.amazonaws.com`;
  if (c.type !== 'vertex') return undefined;
  return typeof c.region === 'string' && /^[a-z0-9-]{1,40}$/.test(c.region) && c.region !== 'global' ? `https://${c.region}-aiplatform.googleapis.com` : 'https://aiplatform.googleapis.com';
}

/** The tree with each cloud channel that gives no `base_url` given its cloud's address for its region. */
function withCloudDefaults(raw: unknown): unknown {
  if (!isRecord(raw) || !Array.isArray(raw.channels)) return raw;
  return {
    ...raw,
    channels: raw.channels.map((ch) => (isRecord(ch) && ch.base_url === undefined && cloudBaseUrl(ch) ? { ...ch, base_url: cloudBaseUrl(ch) } : ch)),
  };
}

function crossProblems(raw: unknown, files: KeyFiles): Problem[] {
  const out: Problem[] = [];
  if (!isRecord(raw)) return out;

  if (Array.isArray(raw.channels)) {
    const firstByName = new Map<string, number>();
    raw.channels.forEach((ch, i) => {
      if (!isRecord(ch)) return;
      if (typeof ch.name === 'string' && ch.name.trim() !== '') {
        const first = firstByName.get(ch.name.trim());
        if (first === undefined) firstByName.set(ch.name.trim(), i);
        else out.push({ path: ['channels', i, 'name'], message: `duplicate: channels[${first}] has the same name` });
      }
      out.push(...cloudFieldProblems(ch, i, files));
      if (Array.isArray(ch.models)) {
        const seen = new Map<string, number>();
        ch.models.forEach((m, j) => {
          if (typeof m !== 'string') return;
          const first = seen.get(m.trim());
          if (first === undefined) seen.set(m.trim(), j);
          else out.push({ path: ['channels', i, 'models', j], message: `duplicate of models[${first}]` });
        });
      }
    });
  }

  if (isRecord(raw.models)) {
    for (const [id, price] of Object.entries(raw.models)) {
      if (!isRecord(price)) continue;
      const has = (k: string) => price[k] !== undefined;
      const tokens = TOKEN_FIELDS.some(has);
      const quantities = Object.values(QUANTITY_PRICES).filter((q) => has(q.field)).length;
      const others = Number(has('per_unit')) + Number(has('per_second')) + quantities;
      // A quantity price (characters, minutes, search units) may sit beside token prices: tokens bill the call
      // when the upstream reports them.
      const kinds = quantities === 1 && !has('per_unit') && !has('per_second') ? 1 : Number(tokens) + others;
      if (kinds === 0) {
        out.push({
          path: ['models', id],
          message: 'needs a price: input_per_1m (and output_per_1m) per 1M tokens, per_unit, per_second, input_characters_per_1m, per_minute or per_search_unit',
        });
      } else if (kinds > 1) {
        out.push({
          path: ['models', id],
          message: 'token prices (input_per_1m, output_per_1m), per_unit, per_second and the quantity prices are exclusive: give one kind (token prices may go beside one quantity price)',
        });
      } else if (tokens && !has('input_per_1m')) {
        out.push({ path: ['models', id, 'input_per_1m'], message: 'is required for a token-priced model' });
      }
      const kind = price.kind;
      if (kinds === 1 && typeof kind === 'string') {
        const fits =
          kind === 'chat' || kind === 'embedding'
            ? tokens
            : kind === 'image'
              ? has('per_unit')
              : kind === 'video'
                ? has('per_unit') || has('per_second')
                : kind === 'speech'
                  ? tokens || has('input_characters_per_1m')
                  : kind === 'transcription'
                    ? tokens || has('per_minute')
                    : kind === 'rerank'
                      ? tokens || has('per_search_unit')
                      : true;
        if (!fits) {
          const need = {
            image: 'per_unit',
            video: 'per_unit or per_second',
            speech: 'input_characters_per_1m or token prices',
            transcription: 'per_minute or token prices',
            rerank: 'per_search_unit or token prices',
          }[kind as string] ?? 'input_per_1m/output_per_1m';
          out.push({ path: ['models', id, 'kind'], message: `kind ${kind} needs ${need}` });
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Normalization

function inferKind(id: string, p: GatewayConfigFile['models'][string], channels: ChannelConfig[]): ModelKind {
  if (p.kind) return p.kind;
  if (p.input_characters_per_1m !== undefined) return 'speech';
  if (p.per_minute !== undefined) return 'transcription';
  if (p.per_search_unit !== undefined) return 'rerank';
  if (p.per_second !== undefined) return 'video';
  if (p.per_unit !== undefined) {
    return channels.some((c) => (c.type.startsWith('video-') || c.type === 'openai-video') && c.models.includes(id)) ? 'video' : 'image';
  }
  return p.output_per_1m === undefined ? 'embedding' : 'chat';
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function warningsFor(file: GatewayConfigFile, channels: ChannelConfig[]): string[] {
  const warnings: string[] = [];
  const servedBy = new Map<string, string[]>();
  for (const c of channels) {
    for (const m of c.models) servedBy.set(m, [...(servedBy.get(m) ?? []), c.name]);
  }
  for (const [model, names] of servedBy) {
    if (!file.models[model]) {
      warnings.push(
        `${formatPath(['models', model])}: not priced, but served by channel ${names.join(', ')}; requests for it are refused (400) until it has a price`,
      );
    }
  }
  for (const model of Object.keys(file.models)) {
    if (!servedBy.has(model)) warnings.push(`${formatPath(['models', model])}: priced, but no enabled channel serves it`);
  }
  file.channels.forEach((c, i) => {
    for (const from of Object.keys(c.model_mapping)) {
      if (!c.models.includes(from)) {
        warnings.push(`${formatPath(['channels', i, 'model_mapping', from])}: not one of this channel's models (ignored)`);
      }
    }
  });
  return warnings;
}

function normalize(file: GatewayConfigFile, source: string, files: KeyFiles): GatewayConfig {
  const channels: ChannelConfig[] = file.channels
    .filter((c) => c.enabled)
    .map((c) => ({
      name: c.name,
      type: c.type,
      base_url: c.base_url,
      key: c.key,
      models: c.models,
      priority: c.priority,
      weight: c.weight,
      groups: [...new Set(c.groups)],
      model_mapping: Object.fromEntries(Object.entries(c.model_mapping).filter(([from]) => c.models.includes(from))),
      timeout_ms: c.timeout_ms,
      responses_api: c.responses_api,
      batch_api: c.batch_api,
      headers: c.headers,
      ...(c.api_version !== undefined && { api_version: c.api_version }),
      ...(c.azure_ad !== undefined && { azure_ad: c.azure_ad }),
      ...(c.type === 'vertex' && {
        vertex: {
          project: c.project!,
          region: c.region!,
          credentials: readServiceAccount(c, files).json,
          credentialsSource: c.credentials_file !== undefined ? c.credentials_file : c.credentials !== undefined ? 'credentials' : null,
        },
      }),
      ...(c.type === 'bedrock' && { bedrock: { region: c.region!, aws: c.aws ?? null } }),
    }));

  const models: Record<string, ModelPrice> = {};
  for (const [id, p] of Object.entries(file.models)) {
    const price: ModelPrice = { reasoning: p.reasoning, thinking: p.thinking ?? p.reasoning, kind: inferKind(id, p, channels) };
    if (p.batch_multiplier !== undefined) price.batch_multiplier = p.batch_multiplier;
    if (p.input_per_1m !== undefined) {
      for (const f of TOKEN_PRICE_FIELDS) if (p[f] !== undefined) price[f] = p[f];
      price.output_per_1m = p.output_per_1m ?? decimal(0);
      if (p.above_200k) {
        const block: TokenPrices = {};
        for (const f of TOKEN_PRICE_FIELDS) if (p.above_200k[f] !== undefined) block[f] = p.above_200k[f];
        price.above_200k = block;
      }
    }
    if (p.per_unit !== undefined) price.per_unit = p.per_unit;
    if (p.per_second !== undefined) price.per_second = p.per_second;
    for (const q of Object.values(QUANTITY_PRICES)) if (p[q.field] !== undefined) price[q.field] = p[q.field];
    if (p.owned_by !== undefined) price.owned_by = p.owned_by;
    models[id] = price;
  }

  const groups: Record<string, GroupConfig> = {};
  for (const [name, g] of Object.entries(file.groups)) {
    groups[name] = {
      multiplier: g.multiplier ?? ONE,
      rpm_limit: g.rpm_limit,
      tpm_limit: g.tpm_limit,
      max_concurrency: g.max_concurrency,
      period_quota: g.period_quota,
      quota_period: g.quota_period ?? null,
    };
  }

  return deepFreeze({ channels, models, groups, warnings: warningsFor(file, channels), source });
}

/**
 * Validates an interpolated tree. Every problem is returned at once as `path: message`; no message contains
 * a value from the tree (only paths, field names, channel names, model ids and the names of variables).
 */
export function validateGatewayConfig(
  raw: unknown,
  source: string,
  skip: readonly (readonly PathSegment[])[] = [],
): { ok: true; config: GatewayConfig } | { ok: false; problems: string[] } {
  raw = withCloudDefaults(raw);
  const parsed = gatewayConfigFileSchema.safeParse(raw);
  const skipped = (p: Problem) => skip.some((s) => s.length <= p.path.length && s.every((seg, i) => p.path[i] === seg));
  const files: KeyFiles = new Map();
  const problems = [...(parsed.success ? [] : zodProblems(parsed.error)), ...crossProblems(raw, files)].filter((p) => !skipped(p));
  if (problems.length > 0 || !parsed.success) {
    return { ok: false, problems: [...new Set(problems.map((p) => `${formatPath(p.path)}: ${p.message}`))] };
  }
  return { ok: true, config: normalize(parsed.data, source, files) };
}
