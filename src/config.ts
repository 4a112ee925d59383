import { isIP } from 'node:net';
import { z } from 'zod';

/** `10.0.0.1`, `::1`, `10.0.0.0/8`, `fd00::/8`. */
function isAddressOrCidr(v: string): boolean {
  const [ip, bits, extra] = v.split('/');
  const family = isIP(ip);
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const port = z.coerce
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(0, 'must be between 0 and 65535')
  .max(65535, 'must be between 0 and 65535');

const configSchema = z.object({
  PORT: port.default(3000),
  HOST: z
    .string()
    .regex(/^[A-Za-z0-9.:-]+$/, 'must be a host name or IP address, for example 127.0.0.1 or 0.0.0.0')
    .default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .refine((v) => URL.canParse(v), 'is not a valid URL')
    .optional(),
  TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[^\s:/]+:\d+$/, 'must be host:port, for example 127.0.0.1:7233')
    .optional(),
  TEMPORAL_NAMESPACE: z.string().min(1, 'must not be empty').default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1, 'must not be empty').default('gateway'),
  GATEWAY_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters (it derives the key-encryption key)')
    .optional(),
  DATA_DIR: z.string().min(1, 'must not be empty').default('./data'),
  /**
   * Where lease settles are journaled before their answers leave (docs/decisions/0062-settle-journal.md). Unset:
   * DATA_DIR/billing-journal; `off`: no journal, every answer waits for its settle's commit.
   */
  BILLING_JOURNAL_DIR: z.string().min(1, 'must not be empty (unset it for DATA_DIR/billing-journal, or say off)').optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  GATEWAY_BOOTSTRAP_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .regex(/^[A-Za-z0-9_-]+$/, 'may contain only letters, digits, _ and -')
    .optional(),
  GATEWAY_BODY_LIMIT_BYTES: z.coerce
    .number({ error: 'must be a number of bytes' })
    .int('must be a whole number of bytes')
    .min(1024, 'must be at least 1024 bytes')
    .max(1024 * 1024 * 1024, 'must be at most 1 GiB')
    .default(10 * 1024 * 1024),
  /** Largest multipart body (image edits), counted on the bytes read, chunked bodies included. */
  GATEWAY_MULTIPART_LIMIT_BYTES: z.coerce
    .number({ error: 'must be a number of bytes' })
    .int('must be a whole number of bytes')
    .min(1024, 'must be at least 1024 bytes')
    .max(1024 * 1024 * 1024, 'must be at most 1 GiB')
    .default(25 * 1024 * 1024),
  /** How long a client may take to send a whole request (headers and body); slower ones get 408. */
  GATEWAY_REQUEST_TIMEOUT_SECONDS: z.coerce
    .number({ error: 'must be a number of seconds' })
    .int('must be a whole number of seconds')
    .min(1, 'must be at least 1 second')
    .max(3600, 'must be at most 3600 seconds')
    .default(60),
  /** `off`: a WebSocket upgrade of /v1/responses is a 426 (clients such as Codex then use HTTP at once). */
  RESPONSES_WEBSOCKET: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
  /** Most client connections one api process holds open at once; further ones are closed on arrival. */
  GATEWAY_MAX_CONNECTIONS: z.coerce
    .number({ error: 'must be a number of connections' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(1_000_000, 'must be at most 1000000')
    .default(10_000),
  /** Deepest nesting of arrays and objects a JSON request body may have. */
  GATEWAY_JSON_MAX_DEPTH: z.coerce
    .number({ error: 'must be a number of levels' })
    .int('must be a whole number')
    .min(8, 'must be at least 8')
    .max(1000, 'must be at most 1000')
    .default(64),
  /** Most elements any one array of a JSON request body may have. */
  GATEWAY_JSON_MAX_ARRAY_LENGTH: z.coerce
    .number({ error: 'must be a number of elements' })
    .int('must be a whole number')
    .min(100, 'must be at least 100')
    .max(10_000_000, 'must be at most 10000000')
    .default(10_000),
  /** Proxy addresses (IPs or CIDRs, comma-separated) whose X-Forwarded-Proto / -For headers are believed. */
  TRUST_PROXY: z
    .string()
    .transform((v) => v.split(',').map((a) => a.trim()).filter(Boolean))
    .pipe(z.array(z.string().refine(isAddressOrCidr, 'must list IP addresses or CIDR ranges, for example 127.0.0.1,10.0.0.0/8')))
    .default([]),
  /**
   * Hosts (exact names), IP addresses and CIDR ranges that webhooks may reach even when not public, over http too.
   * Without it only public https addresses are called (plus loopback over http in the embedded default).
   */
  OUTBOUND_ALLOWLIST: z
    .string()
    .transform((v) => v.split(',').map((a) => a.trim().toLowerCase()).filter(Boolean))
    .pipe(
      z.array(
        z.string().refine((v) => isAddressOrCidr(v) || /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(v), 'must list host names, IP addresses or CIDR ranges, for example hooks.internal,10.0.0.0/8'),
      ),
    )
    .default([]),
  GATEWAY_CONFIG: z.string().min(1, 'must not be empty').optional(),
  /** When set, GET /metrics requires `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /**
   * How many processes `gateway api` (and `gateway start` on PostgreSQL) serve from, sharing one port: `auto` (the
   * cores this process may use, cgroup CPU limits respected) or a whole number; `1` is one process, as before.
   */
  GATEWAY_PROCESSES: z
    .string()
    .regex(/^(auto|[1-9]\d{0,2})$/, 'must be auto or a whole number from 1 to 999')
    .transform((v): 'auto' | number => (v === 'auto' ? 'auto' : Number(v)))
    .default('auto'),
  /** A worker-only process (`gateway worker`) serves its /metrics on this port when set. */
  WORKER_METRICS_PORT: port.optional(),
  /** A worker-only process lowers its own CPU priority to this nice value (0-19) when set. */
  WORKER_NICE: z.coerce
    .number({ error: 'must be a nice value from 0 to 19' })
    .int('must be a whole number from 0 to 19')
    .min(0, 'must be from 0 to 19 (raising priority is not the gateway\'s business)')
    .max(19, 'must be from 0 to 19')
    .optional(),
  /** OTLP/HTTP collector base URL; when set, traces are exported (spans to `<url>/v1/traces`). Off when unset. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .string()
    .refine((v) => /^https?:\/\//.test(v) && URL.canParse(v), 'must be an http:// or https:// URL, for example http://127.0.0.1:4318')
    .optional(),
  OTEL_SERVICE_NAME: z.string().min(1, 'must not be empty').default('ai-gateway'),
  GATEWAY_VIDEO_DEADLINE_SECONDS: z.coerce
    .number({ error: 'must be a number of seconds' })
    .int('must be a whole number of seconds')
    .min(10, 'must be at least 10 seconds')
    .max(7 * 24 * 3600, 'must be at most 7 days')
    .default(1200),
  /**
   * Where finished videos are kept: `s3://bucket/prefix` (any S3 API; AWS_* variables, AWS_ENDPOINT_URL_S3 for an
   * S3-compatible store) or `file:///dir`. Unset: DATA_DIR/videos.
   */
  VIDEO_STORE_URL: z
    .string()
    .refine((v) => /^(s3:\/\/[^/]+(\/.*)?|file:\/\/\/.+)$/.test(v), 'must be s3://bucket/prefix or file:///absolute/dir')
    .optional(),
  /** How long a stored video is kept, counted from its copy (default 7 days). */
  VIDEO_RETENTION_DAYS: z.coerce
    .number({ error: 'must be a number of days' })
    .positive('must be more than 0 days')
    .max(3650, 'must be at most 3650 days')
    .default(7),
  /** Largest finished video copied into the store; a larger one completes on the upstream's link (default 2 GiB). */
  VIDEO_MAX_RESULT_BYTES: z.coerce
    .number({ error: 'must be a number of bytes' })
    .int('must be a whole number of bytes')
    .min(1024, 'must be at least 1024 bytes')
    .default(2 * 1024 ** 3),
  /** Batch lines a worker process runs at once, across all its batches (default 64). */
  BATCH_CONCURRENCY: z.coerce
    .number({ error: 'must be a number of lines' })
    .int('must be a whole number of lines')
    .min(1, 'must be at least 1')
    .max(4096, 'must be at most 4096')
    .default(64),
  /** How long batch output and error files are kept, counted from the batch's end (default 30 days). */
  BATCH_FILE_RETENTION_DAYS: z.coerce
    .number({ error: 'must be a number of days' })
    .positive('must be more than 0 days')
    .max(3650, 'must be at most 3650 days')
    .default(30),
});

export type Config = z.infer<typeof configSchema>;
export type LogLevel = Config['LOG_LEVEL'];

/** Every variable the gateway reads, in the order docs/configuration.md documents them. */
export const CONFIG_KEYS = Object.keys(configSchema.shape) as (keyof Config)[];

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Reads and validates the environment; empty strings count as unset. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of CONFIG_KEYS) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return parsed.data;
}

/**
 * The production entry points have no embedded fallbacks: each variable they need must be set.
 * Throws one ConfigError naming every missing variable.
 */
export function requireSettings(config: Config, keys: (keyof Config)[], reason: string): void {
  const missing = keys.filter((k) => config[k] === undefined);
  if (missing.length > 0) throw new ConfigError(missing.map((k) => `${k}: required ${reason}`));
}
