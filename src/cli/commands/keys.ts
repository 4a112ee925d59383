import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fchmodSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { batchWorkflowId } from '../../domain/keys/batch-plan';
import { integer, positiveInt } from '../shared/args';
import { ApiOptions, apiFrom, GatewayApi } from '../shared/gateway-api';
import { followProgress, Progress } from '../shared/progress';
/** Loaded when a history command runs: it brings the Temporal worker SDK, which no other command (nor the api) needs. */
const history = () => import('../shared/workflow-history');

// `gateway keys ...`: bulk key rollouts through the HTTP management API of a running gateway (so the
// operator needs only its URL and a system token). Progress is drawn on stderr; keys go only to --out.
// The audit commands (batch-history, replay) read Temporal directly instead: see ../shared/workflow-history.ts.

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

const PAGE_SIZE = 100;

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
function follow(api: GatewayApi, id: number): Promise<Batch> {
  return followProgress({
    label: `batch ${id}`,
    poll: async () => (await api.call<Batch>('GET', `/api/token/batch/${id}`)).data,
    progress: progressOf,
    resumeHint: `batch ${id} keeps running on the gateway; follow it with: gateway keys batch-status ${id} --watch`,
  });
}

function progressOf(b: Batch): Progress {
  return { ...batchProgress(b), status: b.status, done: b.status !== 'running' };
}

function batchProgress(b: Batch): Omit<Progress, 'status' | 'done'> {
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
      await (await history()).exportHistoryToFile(batchWorkflowId(batchId), opts);
    });

  keys
    .command('replay')
    .description('replay exported workflow histories against the workflow code of this checkout; exits 1 when any does not replay (non-determinism)')
    .argument('<file...>', 'files written by `keys batch-history` (or Temporal\'s own JSON history files)')
    .option('--workflow-bundle <file>', 'replay against this pre-built workflow bundle instead of src/workflows')
    .action(async (files: string[], opts: { workflowBundle?: string }) => {
      await (await history()).replayHistoryFiles(files, opts);
    });
}
