import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { DefaultLogger, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { closeSync, existsSync, fchmodSync, openSync, readFileSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { loadConfig } from '../../config';
import { batchWorkflowId } from '../../domain/keys/batch-plan';
import { Resources } from '../../runtime/resources';
import { installTemporalRuntime, openTemporal } from '../../runtime/temporal';
import { exportWorkflowHistory, parseHistoryFile, replayHistories } from '../../temporal/history';
import { readSecret, SecretSpec } from '../secrets';

// `gateway keys ...`: bulk key rollouts through the HTTP management API of a running gateway (so the
// operator needs only its URL and a system token). Progress is drawn on stderr; keys go only to --out.
// The audit commands (batch-history, replay) read Temporal directly instead: see ../../temporal/history.

interface ApiOptions {
  baseUrl?: string;
  token?: string;
  tokenFile?: string;
}

interface WatchOptions {
  wait: boolean;
  out?: string;
  force?: boolean;
}

interface Batch {
  id: number;
  kind: 'issue' | 'status' | 'rotate';
  status: 'running' | 'completed' | 'failed' | 'cancelled';
  phase: string | null;
  requested: number;
  created: number;
  changed: number;
  processed: number;
  source_batch_id: number | null;
  error: string | null;
  note: string | null;
  grace_ends_time: number | null;
}

const POLL_MS = 500;
const PAGE_SIZE = 100;

class GatewayApi {
  constructor(private readonly baseUrl: string, private readonly token: string) {}

  /** One call; retried (same request, same Idempotency-Key) on transport errors and 502/503/504. */
  async call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; data: T; total: number | null }> {
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${this.baseUrl}${path}`, {
          method,
          headers: {
            authorization: this.token,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (err) {
        if (attempt >= 5) throw new Error(`cannot reach the gateway at ${this.baseUrl}: ${(err as Error).message}`);
        await sleep(attempt * 500);
        continue;
      }
      if ([502, 503, 504].includes(res.status) && attempt < 5) {
        await sleep(attempt * 500);
        continue;
      }
      const text = await res.text();
      let parsed: { success?: boolean; message?: string; data?: T } = {};
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: reported below
      }
      if (!res.ok || parsed.success !== true) {
        throw new Error(`${method} ${path}: HTTP ${res.status}: ${parsed.message ?? text.slice(0, 200)}`);
      }
      const total = res.headers.get('x-total-count');
      return { status: res.status, data: parsed.data as T, total: total === null ? null : Number(total) };
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The system token: --token (warns), --token-file, GATEWAY_SYSTEM_TOKEN, standard input, or a hidden prompt. */
export const SYSTEM_TOKEN: SecretSpec = {
  what: 'system token',
  argOption: '--token',
  fileOption: '--token-file',
  envVar: 'GATEWAY_SYSTEM_TOKEN',
  prompt: 'System token: ',
};

async function apiFrom(opts: ApiOptions): Promise<GatewayApi> {
  const baseUrl = (opts.baseUrl ?? process.env.GATEWAY_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`).replace(/\/+$/, '');
  const token = await readSecret(SYSTEM_TOKEN, { arg: opts.token, file: opts.tokenFile });
  return new GatewayApi(baseUrl, token);
}

function positiveInt(name: string, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^[0-9]+$/.test(value) || Number(value) > max) throw new InvalidArgumentError(`${name} must be a whole number from 0 to ${max}`);
    return Number(value);
  };
}

function integer(name: string) {
  return (value: string): number => {
    if (!/^-?[0-9]+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number`);
    return Number(value);
  };
}

function keyStatus(value: string): 1 | 2 {
  const v = value.toLowerCase();
  if (['1', 'enable', 'enabled', 'on'].includes(v)) return 1;
  if (['2', 'disable', 'disabled', 'off'].includes(v)) return 2;
  throw new InvalidArgumentError('status must be enabled (1) or disabled (2)');
}

/**
 * The key file: created before anything starts (so a bad path costs nothing), mode 0600 from the first
 * byte. Without --force an existing file is never overwritten.
 */
class KeyFile {
  private constructor(readonly path: string, private readonly fd: number, private readonly createdHere: boolean) {}

  static open(path: string, force: boolean): KeyFile {
    const existed = existsSync(path);
    let fd: number;
    try {
      fd = openSync(path, force ? 'w' : 'wx', 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') throw new Error(`${path} exists; choose another --out or pass --force to overwrite it`);
      throw new Error(`cannot create ${path}: ${(err as Error).message}`);
    }
    // The mode of openSync applies only to a new file (and through the umask): make it 0600 regardless.
    fchmodSync(fd, 0o600);
    return new KeyFile(path, fd, !existed);
  }

  write(line: string): void {
    writeSync(this.fd, line);
  }

  close(): void {
    closeSync(this.fd);
  }

  /** Used when nothing was started: leaves no empty file behind. */
  discard(): void {
    this.close();
    if (this.createdHere) unlinkSync(this.path);
  }
}

/** Shows a batch's progress until it leaves `running`: a bar on a terminal, a line every few seconds otherwise. */
async function follow(api: GatewayApi, id: number): Promise<Batch> {
  const tty = Boolean(process.stderr.isTTY);
  const bar = new SingleBar(
    {
      stream: process.stderr,
      format: `batch ${id} {phase} [{bar}] {value}/{total} {extra}`,
      hideCursor: true,
      clearOnComplete: false,
      noTTYOutput: false,
    },
  );
  let started = false;
  let lastLine = 0;
  let lastText = '';
  const stopOnInterrupt = () => {
    if (started) bar.stop();
    process.stderr.write(`\nbatch ${id} keeps running on the gateway; follow it with: gateway keys batch-status ${id} --watch\n`);
    process.exit(130);
  };
  process.once('SIGINT', stopOnInterrupt);
  try {
    for (;;) {
      const { data: b } = await api.call<Batch>('GET', `/api/token/batch/${id}`);
      const { value, total, phase, extra } = progressOf(b);
      if (tty) {
        if (!started) {
          bar.start(total, value, { phase, extra });
          started = true;
        } else {
          bar.setTotal(total);
          bar.update(value, { phase, extra });
        }
      } else {
        const text = `batch ${id}: ${b.status} ${phase} ${value}/${total} ${extra}`.trim();
        if (text !== lastText && (Date.now() - lastLine > 2000 || b.status !== 'running')) {
          process.stderr.write(`${text}\n`);
          lastLine = Date.now();
          lastText = text;
        }
      }
      if (b.status !== 'running') return b;
      await sleep(POLL_MS);
    }
  } finally {
    if (started) bar.stop();
    process.removeListener('SIGINT', stopOnInterrupt);
  }
}

function progressOf(b: Batch): { value: number; total: number; phase: string; extra: string } {
  const total = Math.max(b.requested, 1);
  if (b.kind === 'issue') return { value: b.created, total, phase: 'issuing', extra: '' };
  if (b.kind === 'status') return { value: b.processed, total, phase: 'updating', extra: `(${b.changed} changed)` };
  if (b.phase === 'grace') {
    const left = b.grace_ends_time === null ? 0 : Math.max(0, b.grace_ends_time - Math.floor(Date.now() / 1000));
    return { value: b.created, total, phase: 'grace', extra: `(old keys disabled in ${left} s)` };
  }
  if (b.phase === 'disabling' || b.phase === 'done') {
    return { value: b.processed, total, phase: 'disabling old keys', extra: `(${b.changed} disabled)` };
  }
  return { value: b.created, total, phase: 'issuing replacements', extra: '' };
}

/** Writes every key of the batch as JSONL: {"id", "name", "key": "sk-..."}. */
async function writeKeys(api: GatewayApi, id: number, file: KeyFile): Promise<number> {
  let written = 0;
  for (let p = 1; ; p++) {
    const { data } = await api.call<Array<{ id: number; name: string; key: string }>>(
      'GET', `/api/token/batch/${id}/keys?p=${p}&page_size=${PAGE_SIZE}`,
    );
    for (const k of data) file.write(`${JSON.stringify({ id: k.id, name: k.name, key: `sk-${k.key}` })}\n`);
    written += data.length;
    if (data.length < PAGE_SIZE) return written;
  }
}

function summary(b: Batch): string {
  const counts = b.kind === 'issue'
    ? `${b.created} of ${b.requested} keys created`
    : b.kind === 'status'
      ? `${b.processed} of ${b.requested} keys visited, ${b.changed} changed`
      : `${b.created} replacement keys created, ${b.changed} old keys disabled`;
  return [`batch ${b.id} (${b.kind}) ${b.status}: ${counts}`, b.error ? `error: ${b.error}` : '', b.note ?? '']
    .filter(Boolean)
    .join('\n');
}

/** Starts a batch with the file opened first, follows it, writes its keys; a failed or cancelled batch exits 1. */
async function run(
  api: GatewayApi,
  opts: WatchOptions,
  start: () => Promise<Batch>,
  keysOf: (b: Batch) => number | null,
): Promise<void> {
  if (opts.out && !opts.wait) throw new Error('--out needs to follow the batch to its end: drop --no-wait');
  const file = opts.out ? KeyFile.open(opts.out, Boolean(opts.force)) : null;
  let batch: Batch;
  try {
    batch = await start();
  } catch (err) {
    file?.discard();
    throw err;
  }
  process.stdout.write(`batch ${batch.id} (${batch.kind}) started: ${batch.requested} keys\n`);
  if (!opts.wait) return;
  try {
    batch = await follow(api, batch.id);
    process.stdout.write(`${summary(batch)}\n`);
    const keysBatch = keysOf(batch);
    if (file && keysBatch !== null) {
      const n = await writeKeys(api, keysBatch, file);
      process.stdout.write(`wrote ${n} keys to ${file.path} (mode 0600)\n`);
    }
  } finally {
    file?.close();
  }
  if (batch.status !== 'completed') process.exitCode = 1;
}

export function registerKeysCommands(program: Command): void {
  const keys = program
    .command('keys')
    .description('bulk key rollouts through the management API (GATEWAY_URL, GATEWAY_SYSTEM_TOKEN); audit of their workflow histories');

  const withApi = (cmd: Command) =>
    cmd
      .option('--base-url <url>', 'gateway base URL (default: $GATEWAY_URL, else http://127.0.0.1:$PORT or 3000)')
      .option('--token-file <file>', 'read the system token from this file (- for standard input); default: '
        + '$GATEWAY_SYSTEM_TOKEN, else standard input when piped, else a prompt that does not echo')
      .option('--token <token>', 'the system token itself: avoid, it ends up in shell history and npm\'s log (warns)');

  withApi(
    keys
      .command('batch')
      .description('issue keys as one durable batch (named <name>-00001, ...) and follow its progress')
      .requiredOption('--count <n>', 'how many keys, 1 to 100000', positiveInt('--count', 100_000))
      .requiredOption('--name <prefix>', 'name prefix of the keys')
      .option('--remain-quota <credits>', 'quota per key in credits (500000 = 1 USD)', positiveInt('--remain-quota'), 0)
      .option('--unlimited-quota', 'keys without a quota cap', false)
      .option('--group <group>', 'group the keys are bound to', '')
      .option('--models <list>', 'comma-separated model allowlist (empty: any model)', '')
      .option('--expired-time <unix>', 'expiry in Unix seconds, -1 for never', integer('--expired-time'), -1)
      .option('--idempotency-key <key>', 'repeat a command safely: the same key never starts a second batch (default: random)')
      .option('--out <file>', 'write the keys as JSONL ({"id","name","key"}) to a new file with mode 0600')
      .option('--force', 'overwrite --out if it exists', false)
      .option('--no-wait', 'start the batch and return without following it'),
  ).action(async (opts: ApiOptions & WatchOptions & {
    count: number; name: string; remainQuota: number; unlimitedQuota: boolean; group: string; models: string;
    expiredTime: number; idempotencyKey?: string;
  }) => {
    const api = await apiFrom(opts);
    const idempotencyKey = opts.idempotencyKey ?? `cli-${randomUUID()}`;
    await run(api, opts, async () => {
      const { data } = await api.call<Batch>('POST', '/api/token/batch', {
        count: opts.count,
        name: opts.name,
        remain_quota: opts.remainQuota,
        unlimited_quota: opts.unlimitedQuota,
        group: opts.group,
        models: opts.models,
        expired_time: opts.expiredTime,
      }, { 'idempotency-key': idempotencyKey });
      return data;
    }, (b) => b.id);
  });

  withApi(
    keys
      .command('rotate')
      .description('replace every key of a batch (same name and settings), then disable the old keys after a grace period')
      .argument('<batch-id>', 'the batch whose keys are rotated', positiveInt('batch id'))
      .requiredOption('--grace-seconds <n>', 'how long the old keys keep working, 0 to 2592000', positiveInt('--grace-seconds', 2_592_000))
      .option('--idempotency-key <key>', 'repeat a command safely (default: random)')
      .option('--out <file>', 'write the replacement keys as JSONL to a new file with mode 0600')
      .option('--force', 'overwrite --out if it exists', false)
      .option('--no-wait', 'start the rotation and return without following it'),
  ).action(async (batchId: number, opts: ApiOptions & WatchOptions & { graceSeconds: number; idempotencyKey?: string }) => {
    const api = await apiFrom(opts);
    const idempotencyKey = opts.idempotencyKey ?? `cli-${randomUUID()}`;
    await run(api, opts, async () => {
      const { data } = await api.call<Batch>('POST', `/api/token/batch/${batchId}/rotate`, {
        grace_seconds: opts.graceSeconds,
      }, { 'idempotency-key': idempotencyKey });
      return data;
    }, (b) => (b.created > 0 ? b.id : null));
  });

  withApi(
    keys
      .command('batch-status')
      .description('show a batch; with --status, enable or disable every key of it as a durable batch')
      .argument('<batch-id>', 'the batch', positiveInt('batch id'))
      .option('--status <status>', 'enabled (1) or disabled (2): change every key of the batch', keyStatus)
      .option('--watch', 'without --status: follow a running batch until it ends', false)
      .option('--idempotency-key <key>', 'repeat a command safely (default: random)')
      .option('--no-wait', 'start the status change and return without following it'),
  ).action(async (batchId: number, opts: ApiOptions & WatchOptions & { status?: 1 | 2; watch: boolean; idempotencyKey?: string }) => {
    const api = await apiFrom(opts);
    if (opts.status === undefined) {
      const { data } = await api.call<Batch>('GET', `/api/token/batch/${batchId}`);
      const batch = opts.watch && data.status === 'running' ? await follow(api, batchId) : data;
      process.stdout.write(`${JSON.stringify(batch, null, 2)}\n`);
      return;
    }
    const idempotencyKey = opts.idempotencyKey ?? `cli-${randomUUID()}`;
    await run(api, { ...opts, out: undefined }, async () => {
      const { data } = await api.call<Batch>('PUT', `/api/token/batch/${batchId}?status_only=true`, {
        status: opts.status,
      }, { 'idempotency-key': idempotencyKey });
      return data;
    }, () => null);
  });

  withApi(
    keys
      .command('batch-cancel')
      .description('cancel a running batch (keys already made stay; a rotation cancelled in its grace period leaves the old keys enabled)')
      .argument('<batch-id>', 'the batch', positiveInt('batch id')),
  ).action(async (batchId: number, opts: ApiOptions) => {
    const api = await apiFrom(opts);
    const { data } = await api.call<Batch>('DELETE', `/api/token/batch/${batchId}`);
    process.stdout.write(`${summary(data)}\n`);
  });

  keys
    .command('batch-history')
    .description('export the workflow history of a batch (every run of keys:<batch-id>) as JSON, for audit and `keys replay`; '
      + 'reads Temporal directly: TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE, else the dev server in DATA_DIR (gateway stopped)')
    .argument('<batch-id>', 'the batch', positiveInt('batch id'))
    .option('--out <file>', 'write the JSON to this new file (default: standard output)')
    .option('--force', 'overwrite --out if it exists', false)
    .action(async (batchId: number, opts: { out?: string; force: boolean }) => {
      // Checked before connecting, so a bad path costs nothing.
      if (opts.out && !opts.force && existsSync(opts.out)) throw new Error(`${opts.out} exists; choose another --out or pass --force to overwrite it`);
      const workflowId = batchWorkflowId(batchId);
      const text = await withTemporalClient(async (client, where) => {
        try {
          return await exportWorkflowHistory(client, workflowId, undefined, { allRuns: true });
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) throw new Error(`no workflow ${workflowId} on Temporal ${where}`);
          throw err;
        }
      });
      if (!opts.out) {
        process.stdout.write(text);
        return;
      }
      writeFileSync(opts.out, text, { flag: opts.force ? 'w' : 'wx' });
      const runs = (JSON.parse(text) as { runs: unknown[] }).runs.length;
      process.stderr.write(`wrote the history of ${workflowId} (${runs} run${runs === 1 ? '' : 's'}) to ${opts.out}\n`);
    });

  keys
    .command('replay')
    .description('replay exported workflow histories against the workflow code of this checkout; exits 1 when any does not replay (non-determinism)')
    .argument('<file...>', 'files written by `keys batch-history` (or Temporal\'s own JSON history files)')
    .option('--workflow-bundle <file>', 'replay against this pre-built workflow bundle instead of src/workflows')
    .action(async (files: string[], opts: { workflowBundle?: string }) => {
      const { LOG_LEVEL } = loadConfig();
      if (LOG_LEVEL === 'debug' || LOG_LEVEL === 'trace') {
        installTemporalRuntime(LOG_LEVEL);
      } else {
        // Each failure is reported below with its details: the SDK core's own warning about it would repeat them.
        Runtime.install({
          logger: new DefaultLogger('ERROR'),
          shutdownSignals: [],
          telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }) } },
        });
      }
      const histories = files.map((f) => parseHistoryFile(readFileSync(f, 'utf8'), f));
      const reports = await replayHistories(histories, opts.workflowBundle ? { workflowBundle: { codePath: opts.workflowBundle } } : {});
      let failed = 0;
      for (const r of reports) {
        const runs = histories[r.index].runs.length;
        const what = `${files[r.index]}: ${r.workflowId} run ${r.run}/${runs} (${r.workflowType}, ${r.runId})`;
        if (r.ok) {
          process.stdout.write(`${what}: ok\n`);
        } else {
          failed++;
          process.stderr.write(`${what}: ${r.nonDeterministic ? 'NON-DETERMINISTIC' : 'FAILED'}: ${r.error}\n`);
        }
      }
      process.stdout.write(`${reports.length - failed} of ${reports.length} runs replayed against the current workflow code\n`);
      if (failed > 0) process.exitCode = 1;
    });
}

/** A Temporal client for one command: TEMPORAL_ADDRESS, else the dev server keeping its state in DATA_DIR. */
async function withTemporalClient<T>(fn: (client: Client, where: string) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const resources = new Resources();
  try {
    const target = await openTemporal(config, resources, (line) => process.stderr.write(`${line}\n`));
    const connection = await Connection.connect({ address: target.address });
    resources.add('the Temporal connection', () => connection.close());
    return await fn(new Client({ connection, namespace: target.namespace }), target.description);
  } finally {
    await resources.closeAll((line) => process.stderr.write(`${line}\n`));
  }
}
