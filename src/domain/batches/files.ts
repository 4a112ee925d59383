import { pipeline, Transform, type Readable } from 'node:stream';
import { NotFoundError, PayloadTooLargeError, ValidationError } from '../errors';
import type { BatchFileRepository, BatchFileRow } from '../ports/batch-files';
import type { ObjectStore } from '../ports/object-store';

export type { BatchFileRow };
import { newFileId, nowSeconds } from './ids';

/**
 * The Files API's files (purpose `batch`, and the `batch_output` files batches write), kept in the object store that
 * keeps finished videos, under `batch-files/<id>`; the row is the record and its owner. A file of another account is
 * a 404, as an absent one.
 */

/** An input file holds at most this many bytes and lines, counted on the bytes read (413 past them). */
export const MAX_INPUT_BYTES = 200 * 1024 * 1024;
export const MAX_INPUT_LINES = 50_000;

export const UPLOAD_PURPOSES = ['batch'] as const;

export const objectKeyOf = (fileId: string) => `batch-files/${fileId}`;

/** The file object exactly as OpenAI's. */
export function fileView(f: BatchFileRow) {
  return {
    id: f.id,
    object: 'file' as const,
    bytes: Number(f.bytes),
    created_at: Number(f.created_at),
    expires_at: f.expires_at === null ? null : Number(f.expires_at),
    filename: f.filename,
    purpose: f.purpose,
    status: 'processed' as const,
    status_details: null,
  };
}

/**
 * Counts bytes and lines as they pass. Past either limit it keeps nothing more and records why (`overflow`): the
 * rest of the upload is read and dropped (bounded by the form's own size limit), and the caller refuses it.
 */
function inputCounter(maxBytes: number, maxLines: number): Transform & { bytes: number; lines: number; last: number; overflow: PayloadTooLargeError | null } {
  const t = new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (t.overflow) return done();
      t.bytes += chunk.length;
      for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) t.lines++;
      if (chunk.length > 0) t.last = chunk[chunk.length - 1];
      if (t.bytes > maxBytes) t.overflow = new PayloadTooLargeError(`file: an input file holds at most ${maxBytes} bytes`);
      // A last line without its newline is a line too.
      else if (t.lines + (t.last !== 10 ? 1 : 0) > maxLines) t.overflow = new PayloadTooLargeError(`file: an input file holds at most ${maxLines} lines`);
      done(null, t.overflow ? undefined : chunk);
    },
  }) as Transform & { bytes: number; lines: number; last: number; overflow: PayloadTooLargeError | null };
  t.bytes = 0;
  t.lines = 0;
  t.last = 10;
  t.overflow = null;
  return t;
}

export interface StagedFile {
  id: string;
  key: string;
  filename: string;
  bytes: number;
  lines: number;
}

export interface FileListQuery {
  purpose?: string;
  limit: number;
  after?: string;
  order: 'asc' | 'desc';
}

export function createBatchFiles(deps: { files: BatchFileRepository; store: ObjectStore; limits?: { maxBytes?: number; maxLines?: number } }) {
  const { files, store } = deps;
  const maxBytes = deps.limits?.maxBytes ?? MAX_INPUT_BYTES;
  const maxLines = deps.limits?.maxLines ?? MAX_INPUT_LINES;

  async function row(accountId: number, id: string): Promise<BatchFileRow> {
    const found = await files.owned(accountId, id);
    if (!found) throw new NotFoundError(`No such File object: ${id}`, 'file_id');
    return found;
  }

  return {
    maxBytes,
    maxLines,

    /** Stores an upload's bytes as they arrive, counted against the limits on the bytes read; `commit` records it. */
    async stage(file: { filename: string; stream: Readable }, signal?: AbortSignal): Promise<StagedFile> {
      const id = newFileId();
      const key = objectKeyOf(id);
      const counter = inputCounter(maxBytes, maxLines);
      // Joined by pipeline before anything is awaited, so an upload cut off while the store is still opening its
      // file (a truncated form) fails the counter, which the store then reads as a failed put, and never goes unheard.
      pipeline(file.stream, counter, () => {});
      try {
        await store.put(key, counter, { contentType: 'application/jsonl' }, signal);
        if (counter.overflow) throw counter.overflow;
      } catch (err) {
        // A put that failed before reading everything leaves the upload unread: end it, so the form does not wait.
        counter.destroy();
        await store.delete(key).catch(() => {});
        throw err;
      }
      const lines = counter.lines + (counter.last !== 10 && counter.bytes > 0 ? 1 : 0);
      return { id, key, filename: file.filename.slice(0, 255) || 'upload.jsonl', bytes: counter.bytes, lines };
    },

    /** Drops staged bytes that will not be recorded (a refused form). */
    async discard(staged: StagedFile): Promise<void> {
      await store.delete(staged.key).catch(() => {});
    },

    /** Records a staged upload once the whole form is read: `purpose` may come after the file. */
    async commit(accountId: number, staged: StagedFile, purpose: string | undefined): Promise<BatchFileRow> {
      if (purpose === undefined || !(UPLOAD_PURPOSES as readonly string[]).includes(purpose)) {
        await this.discard(staged);
        if (purpose === undefined) throw new ValidationError('purpose: is required', 'purpose');
        throw new ValidationError(`purpose: '${purpose.slice(0, 64)}' is not supported; expected one of: ${UPLOAD_PURPOSES.join(', ')}`, 'purpose');
      }
      return files.insert({
        id: staged.id, accountId, purpose, filename: staged.filename, bytes: staged.bytes, lines: staged.lines, objectKey: staged.key, createdAt: nowSeconds(),
      });
    },

    get: row,

    async list(accountId: number, q: FileListQuery) {
      const page = await files.list(accountId, q);
      const rows = page.slice(0, q.limit);
      return {
        object: 'list' as const,
        data: rows.map(fileView),
        first_id: rows[0]?.id ?? null,
        last_id: rows[rows.length - 1]?.id ?? null,
        has_more: page.length > q.limit,
      };
    },

    /** The file's bytes, or a 404 when the store no longer has them. */
    async content(accountId: number, id: string): Promise<{ file: BatchFileRow; body: Readable }> {
      const file = await row(accountId, id);
      const body = await store.get(file.object_key);
      if (!body) throw new NotFoundError(`No such File object: ${id}`, 'file_id');
      return { file, body };
    },

    /** Deletes the files past their expiry (batch outputs after BATCH_FILE_RETENTION_DAYS); how many. */
    async deleteExpired(now = nowSeconds()): Promise<number> {
      let deleted = 0;
      for (;;) {
        const expired = await files.expire(now, 500);
        for (const f of expired) await store.delete(f.object_key);
        deleted += expired.length;
        if (expired.length < 500) return deleted;
      }
    },

    async remove(accountId: number, id: string) {
      const file = await row(accountId, id);
      await files.markDeleted(id, nowSeconds());
      await store.delete(file.object_key);
      return { id, object: 'file' as const, deleted: true };
    },
  };
}

export type BatchFiles = ReturnType<typeof createBatchFiles>;
