import type { Pool } from 'pg';
import { inTransaction } from '../../db/pool';
import { NotFoundError, UnavailableError, ValidationError } from '../errors';
import type { ApiKeyPrincipal } from '../keys/key-auth';
import {
  anthropicBatchView,
  BATCH_COLUMNS,
  type BatchApi,
  type BatchEndpoint,
  batchRecordOf,
  type BatchRecord,
  isEnded,
  MESSAGES_ENDPOINT,
  openAiBatchView,
} from './batch-record';
import type { BatchFiles } from './files';
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

export function createInferenceBatches(deps: { db: Pool; files: BatchFiles; starter: InferenceBatchStarter | null; settings?: Partial<InferenceBatchSettings> }) {
  const { db, files } = deps;
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
    const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE id = $1 AND account_id = $2 AND api = $3 AND deleted_at IS NULL`, [
      id,
      accountId,
      api,
    ]);
    if (!r.rows[0]) throw new NotFoundError(api === 'openai' ? `No batch found with id '${id}'.` : `No message batch found with id '${id}'.`, 'batch_id');
    const b = batchRecordOf(r.rows[0]);
    await ensureRunning(b);
    return b;
  }

  const openAiView = (b: BatchRecord) => openAiBatchView(b);

  async function insert(key: ApiKeyPrincipal, row: { id: string; api: BatchApi; endpoint: BatchEndpoint; inputFileId: string | null; status: string; metadata: unknown; total: number }, opts: CreateOptions, tx: Pick<Pool, 'query'> = db) {
    const now = nowSeconds();
    const r = await tx.query(
      `INSERT INTO inference_batches (id, api, account_id, token_id, token_name, endpoint, input_file_id, status, metadata, callback_url,
         public_origin, request_id, total, created_at, in_progress_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING ${BATCH_COLUMNS}`,
      [
        row.id, row.api, key.accountId, key.tokenId, key.name, row.endpoint, row.inputFileId, row.status, row.metadata === undefined ? null : JSON.stringify(row.metadata),
        opts.callbackUrl, opts.publicOrigin, opts.requestId, row.total, now, row.status === 'in_progress' ? now : null, now + settings.expirySeconds,
      ],
    );
    return batchRecordOf(r.rows[0]);
  }

  /** Starts the batch's workflow; a batch that cannot start is failed at once (nothing was sent or billed). */
  async function start(b: BatchRecord, prepared: boolean): Promise<BatchRecord> {
    if (!deps.starter) throw new UnavailableError('Batches need the Temporal worker, which this gateway was started without');
    try {
      await deps.starter.start(b.id, { prepared });
      return b;
    } catch {
      const now = nowSeconds();
      await db.query(
        `UPDATE inference_batches SET status = 'failed', failed_at = $2, ended_at = $2,
           errors = '{"object":"list","data":[{"code":"internal_error","message":"The batch could not be started; nothing was sent or billed.","param":null,"line":null}]}'
         WHERE id = $1`,
        [b.id, now],
      );
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
      const b = await inTransaction(db, async (tx) => {
        const created = await insert(key, { id, api: 'anthropic', endpoint: MESSAGES_ENDPOINT, inputFileId: null, status: 'in_progress', metadata: undefined, total: requests.length }, opts, tx);
        for (let i = 0; i < requests.length; i += 1000) {
          const part = requests.slice(i, i + 1000);
          await tx.query(
            `INSERT INTO batch_lines (batch_id, idx, custom_id, body, request_id)
             SELECT $1, t.idx, t.custom_id, t.body, t.request_id FROM unnest($2::int[], $3::text[], $4::jsonb[], $5::text[]) AS t(idx, custom_id, body, request_id)`,
            [id, part.map((_, j) => i + j), part.map((r) => r.custom_id), part.map((r) => JSON.stringify(r.params)), part.map((r) => lineRequestId(id, r.custom_id))],
          );
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
      const values: unknown[] = [accountId, q.limit + 1];
      let where = `account_id = $1 AND api = 'openai' AND deleted_at IS NULL`;
      if (q.after) {
        values.push(q.after);
        where += ` AND (created_at, id) < (SELECT created_at, id FROM inference_batches WHERE id = $3 AND account_id = $1)`;
      }
      const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $2`, values);
      const rows = r.rows.slice(0, q.limit).map(batchRecordOf);
      const data = rows.map(openAiView);
      return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null, has_more: r.rows.length > q.limit };
    },

    async listAnthropic(accountId: number, q: { limit: number; beforeId?: string; afterId?: string }, origin: string) {
      const values: unknown[] = [accountId, q.limit + 1];
      let where = `account_id = $1 AND api = 'anthropic' AND deleted_at IS NULL`;
      // Newest first: after_id pages to older batches, before_id to newer ones.
      let order = 'DESC';
      if (q.afterId) {
        values.push(q.afterId);
        where += ` AND (created_at, id) < (SELECT created_at, id FROM inference_batches WHERE id = $3 AND account_id = $1)`;
      } else if (q.beforeId) {
        values.push(q.beforeId);
        where += ` AND (created_at, id) > (SELECT created_at, id FROM inference_batches WHERE id = $3 AND account_id = $1)`;
        order = 'ASC';
      }
      const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE ${where} ORDER BY created_at ${order}, id ${order} LIMIT $2`, values);
      let rows = r.rows.slice(0, q.limit).map(batchRecordOf);
      if (order === 'ASC') rows = rows.reverse();
      const data = rows.map((b) => anthropicBatchView(b, origin));
      return { data, has_more: r.rows.length > q.limit, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null };
    },

    /** `cancelling` at once; the runner sends nothing more and the batch ends `cancelled` once its lines in flight end. */
    async cancel(accountId: number, id: string, api: BatchApi, origin = '') {
      await record(accountId, id, api);
      await db.query(`UPDATE inference_batches SET status = 'cancelling', cancelling_at = $2 WHERE id = $1 AND status IN ('validating', 'in_progress')`, [id, nowSeconds()]);
      return this.get(accountId, id, api, origin);
    },

    /** The operator's view: the account's batches of both APIs, newest first, a page at a time. */
    async listForAccount(accountId: number, q: { offset: number; limit: number; status?: string }) {
      const values: unknown[] = [accountId];
      let where = 'account_id = $1 AND deleted_at IS NULL';
      if (q.status) {
        values.push(q.status);
        where += ` AND status = $${values.length}`;
      }
      const total = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM inference_batches WHERE ${where}`, values);
      const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE ${where} ORDER BY created_at DESC, id DESC OFFSET $${values.length + 1} LIMIT $${values.length + 2}`, [
        ...values,
        q.offset,
        q.limit,
      ]);
      return { items: r.rows.map(batchRecordOf), total: total.rows[0].n };
    },

    /** A batch of either API by id (the console's reads and cancels). */
    async recordOfAccount(accountId: number, id: string): Promise<BatchRecord> {
      const r = await db.query(`SELECT ${BATCH_COLUMNS} FROM inference_batches WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`, [id, accountId]);
      if (!r.rows[0]) throw new NotFoundError(`No batch found with id '${id}'.`, 'batch_id');
      return batchRecordOf(r.rows[0]);
    },

    /** Anthropic's DELETE: only an ended batch, with its results. */
    async remove(accountId: number, id: string) {
      const b = await record(accountId, id, 'anthropic');
      if (!isEnded(b.status)) throw new ValidationError(`Message batch ${id} is still processing; cancel it first, then delete it once it has ended.`);
      await db.query('DELETE FROM inference_batches WHERE id = $1', [id]);
      return { id, type: 'message_batch_deleted' as const };
    },

    /** The lines of an ended batch in input order, a page at a time (the results JSONL is written from them). */
    async *resultLines(accountId: number, id: string): AsyncGenerator<{ custom_id: string; state: string; result: unknown }[]> {
      const b = await record(accountId, id, 'anthropic');
      if (!isEnded(b.status)) throw new ValidationError(`Message batch ${id} has not ended yet; its results are available once processing_status is ended.`);
      for (let after = -1; ; ) {
        const r = await db.query<{ idx: number; custom_id: string; state: string; result: unknown }>(
          'SELECT idx, custom_id, state, result FROM batch_lines WHERE batch_id = $1 AND idx > $2 ORDER BY idx LIMIT 1000',
          [id, after],
        );
        if (r.rows.length === 0) return;
        yield r.rows;
        after = r.rows[r.rows.length - 1].idx;
      }
    },
  };
}

export type InferenceBatches = ReturnType<typeof createInferenceBatches>;
