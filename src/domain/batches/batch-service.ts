import type { Repositories } from '../ports/repositories';
import { NotFoundError, UnavailableError, ValidationError } from '../errors';
import type { ApiKeyPrincipal } from '../keys/key-auth';
import {
  anthropicBatchView,
  type BatchApi,
  type BatchEndpoint,
  type BatchRecord,
  isEnded,
  MESSAGES_ENDPOINT,
  openAiBatchView,
} from './batch-record';
import type { BatchFiles } from './files';
import type { Tx } from '../ports/transactions';
import { lineRequestId, newAnthropicBatchId, newOpenAiBatchId, nowSeconds } from './ids';

/**
 * Batches of either API as their routes see them: created (the row, then workflow batch:<id>), read, listed,
 * cancelled. The lines run in the worker (runner.ts); a batch of another account is a 404, as an absent one.
 */

export interface InferenceBatchStarter {
  start(batchId: string, opts: { prepared: boolean }): Promise<void>;
}

export interface InferenceBatchSettings {
  /** How long a batch may run before its unfinished lines expire (the `24h` completion window). */
  expirySeconds: number;
}

/** How old a running batch must be before a read checks that its workflow runs. */
const RESTART_AFTER_SECONDS = 30;

export const DEFAULT_INFERENCE_BATCH_SETTINGS: InferenceBatchSettings = { expirySeconds: 24 * 3600 };

export interface CreateOptions {
  requestId: string;
  callbackUrl: string | null;
  publicOrigin: string;
}

export interface AnthropicRequest {
  custom_id: string;
  params: Record<string, unknown>;
}

export function createInferenceBatches(deps: { repos: Pick<Repositories, 'batches' | 'transactions'>; files: BatchFiles; starter: InferenceBatchStarter | null; settings?: Partial<InferenceBatchSettings> }) {
  const { files } = deps;
  const { batches } = deps.repos;
  const settings = { ...DEFAULT_INFERENCE_BATCH_SETTINGS, ...deps.settings };

  /** Batches this process has seen running as a workflow (or started again): each is checked once per process. */
  const confirmed = new Set<string>();

  /**
   * A batch recorded by a process that died before it started the batch's workflow would never run: the first read
   * of a batch still running, a while after its creation, starts its workflow again (a no-op when it runs).
   */
  async function ensureRunning(b: BatchRecord): Promise<void> {
    if (!deps.starter || isEnded(b.status) || confirmed.has(b.id) || Date.now() / 1000 - b.createdAt < RESTART_AFTER_SECONDS) return;
    try {
      await deps.starter.start(b.id, { prepared: b.status !== 'validating' });
      confirmed.add(b.id);
      if (confirmed.size > 100_000) confirmed.clear();
    } catch {
      // Temporal unreachable: the next read tries again.
    }
  }

  async function record(accountId: number, id: string, api: BatchApi): Promise<BatchRecord> {
    const b = await batches.owned(accountId, id, api);
    if (!b) throw new NotFoundError(api === 'openai' ? `No batch found with id '${id}'.` : `No message batch found with id '${id}'.`, 'batch_id');
    await ensureRunning(b);
    return b;
  }

  const openAiView = (b: BatchRecord) => openAiBatchView(b);

  function insert(
    key: ApiKeyPrincipal,
    row: { id: string; api: BatchApi; endpoint: BatchEndpoint; inputFileId: string | null; status: 'validating' | 'in_progress'; metadata: unknown; total: number },
    opts: CreateOptions,
    tx?: Tx,
  ) {
    const now = nowSeconds();
    return batches.insert(
      {
        ...row, accountId: key.accountId, tokenId: key.tokenId, tokenName: key.name, callbackUrl: opts.callbackUrl, publicOrigin: opts.publicOrigin,
        requestId: opts.requestId, createdAt: now, inProgressAt: row.status === 'in_progress' ? now : null, expiresAt: now + settings.expirySeconds,
      },
      tx,
    );
  }

  /** Starts the batch's workflow; a batch that cannot start is failed at once (nothing was sent or billed). */
  async function start(b: BatchRecord, prepared: boolean): Promise<BatchRecord> {
    if (!deps.starter) throw new UnavailableError('Batches need the Temporal worker, which this gateway was started without');
    try {
      await deps.starter.start(b.id, { prepared });
      return b;
    } catch {
      const data = [{ code: 'internal_error', message: 'The batch could not be started; nothing was sent or billed.', param: null, line: null }];
      await batches.fail(b.id, nowSeconds(), { object: 'list', data }, null);
      throw new UnavailableError('The batch could not be started; try again');
    }
  }

  return {
    settings,

    async createOpenAi(key: ApiKeyPrincipal, input: { input_file_id: string; endpoint: BatchEndpoint; metadata?: Record<string, string> | null }, opts: CreateOptions) {
      if (!deps.starter) throw new UnavailableError('Batches need the Temporal worker, which this gateway was started without');
      const file = await files.get(key.accountId, input.input_file_id).catch(() => {
        throw new NotFoundError(`No such File object: ${input.input_file_id}`, 'input_file_id');
      });
      if (file.purpose !== 'batch') throw new ValidationError(`input_file_id: the file '${file.id}' was not uploaded with purpose 'batch'`, 'input_file_id');
      const b = await insert(key, { id: newOpenAiBatchId(), api: 'openai', endpoint: input.endpoint, inputFileId: file.id, status: 'validating', metadata: input.metadata ?? null, total: 0 }, opts);
      return openAiView(await start(b, false));
    },

    /** The requests are checked by the route; they become the batch's lines in the transaction that creates it. */
    async createAnthropic(key: ApiKeyPrincipal, requests: AnthropicRequest[], opts: CreateOptions) {
      if (!deps.starter) throw new UnavailableError('Batches need the Temporal worker, which this gateway was started without');
      const id = newAnthropicBatchId();
      const b = await deps.repos.transactions.run(async (tx) => {
        const created = await insert(key, { id, api: 'anthropic', endpoint: MESSAGES_ENDPOINT, inputFileId: null, status: 'in_progress', metadata: undefined, total: requests.length }, opts, tx);
        for (let i = 0; i < requests.length; i += 1000) {
          const part = requests.slice(i, i + 1000);
          await batches.insertLines(id, part.map((r, j) => ({ idx: i + j, customId: r.custom_id, body: r.params, requestId: lineRequestId(id, r.custom_id) })), tx);
        }
        return created;
      });
      return anthropicBatchView(await start(b, true), opts.publicOrigin);
    },

    async get(accountId: number, id: string, api: BatchApi, origin = '') {
      const b = await record(accountId, id, api);
      return api === 'openai' ? openAiView(b) : anthropicBatchView(b, origin);
    },

    record,

    async listOpenAi(accountId: number, q: { limit: number; after?: string }) {
      const page = await batches.page(accountId, 'openai', { limit: q.limit, after: q.after });
      const data = page.slice(0, q.limit).map(openAiView);
      return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null, has_more: page.length > q.limit };
    },

    async listAnthropic(accountId: number, q: { limit: number; beforeId?: string; afterId?: string }, origin: string) {
      // Newest first: after_id pages to older batches, before_id to newer ones (read oldest first, then turned).
      const page = await batches.page(accountId, 'anthropic', q.afterId ? { limit: q.limit, after: q.afterId } : { limit: q.limit, before: q.beforeId });
      let rows = page.slice(0, q.limit);
      if (!q.afterId && q.beforeId) rows = rows.reverse();
      const data = rows.map((b) => anthropicBatchView(b, origin));
      return { data, has_more: page.length > q.limit, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null };
    },

    /** `cancelling` at once; the runner sends nothing more and the batch ends `cancelled` once its lines in flight end. */
    async cancel(accountId: number, id: string, api: BatchApi, origin = '') {
      await record(accountId, id, api);
      await batches.markCancelling(id, nowSeconds());
      return this.get(accountId, id, api, origin);
    },

    /** The operator's view: the account's batches of both APIs, newest first, a page at a time. */
    async listForAccount(accountId: number, q: { offset: number; limit: number; status?: string }) {
      return batches.listForAccount(accountId, q);
    },

    /** A batch of either API by id (the console's reads and cancels). */
    async recordOfAccount(accountId: number, id: string): Promise<BatchRecord> {
      const b = await batches.owned(accountId, id);
      if (!b) throw new NotFoundError(`No batch found with id '${id}'.`, 'batch_id');
      return b;
    },

    /** Anthropic's DELETE: only an ended batch, with its results. */
    async remove(accountId: number, id: string) {
      const b = await record(accountId, id, 'anthropic');
      if (!isEnded(b.status)) throw new ValidationError(`Message batch ${id} is still processing; cancel it first, then delete it once it has ended.`);
      await batches.delete(id);
      return { id, type: 'message_batch_deleted' as const };
    },

    /** The lines of an ended batch in input order, a page at a time (the results JSONL is written from them). */
    async *resultLines(accountId: number, id: string): AsyncGenerator<{ custom_id: string; state: string; result: unknown }[]> {
      const b = await record(accountId, id, 'anthropic');
      if (!isEnded(b.status)) throw new ValidationError(`Message batch ${id} has not ended yet; its results are available once processing_status is ended.`);
      for (let after = -1; ; ) {
        const page = await batches.lines(id, after, 1000);
        if (page.length === 0) return;
        yield page;
        after = page[page.length - 1].idx;
      }
    },
  };
}

export type InferenceBatches = ReturnType<typeof createInferenceBatches>;
