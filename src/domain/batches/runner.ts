import { InvalidApiKeyError } from '../errors';
import type { PeriodBudget } from '../billing/holds';
import type { ApiKeyPrincipal } from '../keys/key-auth';
import { KeyLimitError, type Admission } from '../limits/admission';
import type { BatchRecord } from './batch-record';
import type { BatchRepository, LineResult, PendingLine } from '../ports/batches';
import type { BatchLineCall, LineOutcome } from './ports';
import type { LineSlots } from './slots';

/**
 * Runs a batch's pending lines through the relay engine, as the key that created the batch, for up to `maxMs`:
 * at most the worker's slots in flight (and never more than the key's own concurrency), each admitted under the
 * key's rate limits first (waiting out a refusal), an upstream 429 backed off and retried. Results are written in
 * groups; a line's state changes once (pending to an outcome), so a rerun after a crash sends only what was not
 * recorded, and its ledger row (business key `<batch id>:<custom_id>`) bills it once whatever ran it twice.
 */

export interface RunnerDeps {
  batches: BatchRepository;
  callLine: BatchLineCall;
  slots: LineSlots;
  loadKey(tokenId: number): Promise<ApiKeyPrincipal>;
  /** The key's admission under its limits (a KeyLimitError when over one) and its periodic budget in force. */
  admit(key: ApiKeyPrincipal): Promise<{ admission: Admission; period: PeriodBudget | undefined }>;
  /** The key's concurrency limit in force (0: none). */
  concurrencyOf(key: ApiKeyPrincipal): number;
  /** Counts a line's outcome (gateway_batch_lines_total). */
  onLine?(outcome: 'succeeded' | 'failed'): void;
  log?(msg: string): void;
}

export interface RunOptions {
  signal: AbortSignal;
  /** Called now and then while lines run (the activity's heartbeat). */
  heartbeat(): void;
  /** How long this run may go on before it hands back (the workflow starts the next). */
  maxMs: number;
  /** How often the batch's status is read for a cancel or the expiry (default 500 ms). */
  statusEveryMs?: number;
}

export type RunEnd = { more: boolean; stop: 'cancel' | 'expired' | 'quota' | 'key' | null };

const UPSTREAM_429_ATTEMPTS = 5;

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Group commit of line outcomes: a write starts at once when none is running, else the outcomes that arrive meanwhile
 * go in the next one. Each caller resolves once its outcome is written.
 */
function groupWriter<T>(write: (items: T[]) => Promise<void>): (item: T) => Promise<void> {
  let queue: { item: T; done: (err?: unknown) => void }[] = [];
  let running = false;
  const drain = async () => {
    running = true;
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        await write(batch.map((q) => q.item));
        for (const q of batch) q.done();
      } catch (err) {
        for (const q of batch) q.done(err);
      }
    }
    running = false;
  };
  return (item) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ item, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!running) void drain();
    });
}

export async function runBatchLines(deps: RunnerDeps, batchId: string, opts: RunOptions): Promise<RunEnd> {
  const { batches } = deps;
  const batch = await batches.get(batchId);
  if (!batch || batch.status !== 'in_progress') return { more: false, stop: batch?.status === 'cancelling' ? 'cancel' : null };
  if (Date.now() / 1000 >= batch.expiresAt) return { more: false, stop: 'expired' };

  let key: ApiKeyPrincipal;
  try {
    if (batch.tokenId === null) throw new InvalidApiKeyError('This API key has been deleted');
    key = await deps.loadKey(batch.tokenId);
  } catch (err) {
    if (!(err instanceof InvalidApiKeyError)) throw err;
    // The key that owns the batch can no longer call: what was not sent is not sent.
    await batches.failPending(batchId, 401, errorOf(batch, 401, 'invalid_api_key', err.message));
    return { more: false, stop: 'key' };
  }

  const local = new AbortController();
  const abort = () => local.abort();
  opts.signal.addEventListener('abort', abort, { once: true });
  const signal = local.signal;
  const deadline = Date.now() + opts.maxMs;
  const keyCap = deps.concurrencyOf(key);
  const cap = keyCap > 0 ? Math.min(keyCap, deps.slots.size) : deps.slots.size;

  let stop: RunEnd['stop'] = null;
  const record = groupWriter<LineResult>((results) => batches.recordLines(batchId, results));
  const beat = setInterval(() => opts.heartbeat(), 1000);

  const statusTimer = setInterval(() => {
    void batches
      .get(batchId)
      .then((b) => {
        if (!b || b.status === 'cancelling') stop ??= 'cancel';
        else if (Date.now() / 1000 >= b.expiresAt) stop ??= 'expired';
        if (stop === 'cancel' || stop === 'expired') local.abort();
      })
      .catch(() => {});
  }, opts.statusEveryMs ?? 500);

  async function runLine(line: PendingLine): Promise<LineResult | null> {
    for (let attempt = 1; ; attempt++) {
      let admitted: Awaited<ReturnType<RunnerDeps['admit']>>;
      for (;;) {
        if (signal.aborted) return null;
        try {
          admitted = await deps.admit(key);
          break;
        } catch (err) {
          if (!(err instanceof KeyLimitError)) throw err;
          await sleep(Math.max(1, err.retryAfterSeconds) * 1000, signal);
        }
      }
      if (stop === 'quota') {
        admitted.admission.release();
        return quotaResult(line);
      }
      let outcome: LineOutcome;
      try {
        outcome = await deps.callLine(batch!.endpoint, line.body, {
          key,
          requestId: line.request_id,
          signal,
          period: admitted.period,
          onBilledTokens: admitted.admission.billedTokens,
        });
      } finally {
        admitted.admission.release();
      }
      if (outcome.ok) return { idx: line.idx, state: 'succeeded', status: 200, result: outcome.body };
      // Stopped mid-call (cancel, expiry, the worker going away): not billed, left pending.
      if (signal.aborted) return null;
      if (outcome.code === 'insufficient_quota') {
        stop ??= 'quota';
        return { idx: line.idx, state: 'failed', status: outcome.status, result: outcome.body };
      }
      // Past failover, an upstream 429: waited out (its Retry-After, at least an exponential backoff), then again.
      if (outcome.status === 429 && attempt < UPSTREAM_429_ATTEMPTS) {
        await sleep(Math.max(1000 * 2 ** (attempt - 1), 1000 * (outcome.retryAfterSeconds ?? 0)), signal);
        continue;
      }
      return { idx: line.idx, state: 'failed', status: outcome.status, result: outcome.body };
    }
  }

  const quotaResult = (line: PendingLine): LineResult => ({ idx: line.idx, state: 'failed', status: 429, result: quotaError(batch) });

  const inFlight = new Set<Promise<void>>();
  let cursor = -1;
  try {
    outer: while (stop === null && !signal.aborted && Date.now() < deadline) {
      const claimed = await batches.pendingLines(batchId, cursor, 256);
      if (claimed.length === 0) break;
      for (const line of claimed) {
        if (stop !== null || signal.aborted || Date.now() >= deadline) break outer;
        while (inFlight.size >= cap) await Promise.race(inFlight);
        if (!(await deps.slots.acquire(signal))) break outer;
        cursor = line.idx;
        // A line holds its slot until its outcome is written: at a crash, only the lines holding slots run again.
        const p: Promise<void> = runLine(line)
          .then(async (r) => {
            if (!r) return;
            await record(r);
            deps.onLine?.(r.state);
          })
          .catch((err: unknown) => deps.log?.(`batch ${batchId} line ${line.idx}: ${(err as Error).message}`))
          .finally(() => {
            deps.slots.release();
            inFlight.delete(p);
          });
        inFlight.add(p);
      }
    }
    await Promise.all(inFlight);
  } finally {
    clearInterval(beat);
    clearInterval(statusTimer);
    opts.signal.removeEventListener('abort', abort);
    await Promise.all(inFlight);
  }

  if (stop === 'quota') {
    await batches.failPending(batchId, 429, quotaError(batch));
    return { more: false, stop };
  }
  if (stop !== null) return { more: false, stop };
  return { more: await batches.hasPending(batchId), stop: null };
}

function errorOf(batch: BatchRecord, status: number, code: string, message: string): unknown {
  if (batch.api === 'anthropic') {
    const type = status === 401 ? 'authentication_error' : status === 429 ? 'rate_limit_error' : 'invalid_request_error';
    return { type: 'error', error: { type, message } };
  }
  return { error: { message, type: status === 429 ? 'insufficient_quota' : 'invalid_request_error', param: null, code } };
}

const quotaError = (batch: BatchRecord) =>
  errorOf(batch, 429, 'insufficient_quota', 'You exceeded your current quota: the key or account has insufficient quota; this line was not sent');
