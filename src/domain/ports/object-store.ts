import type { Readable } from 'node:stream';

/**
 * Where bytes outlive a request: finished videos (and the first frames clients upload) past the upstream's own
 * expiry, and batch input and output files. Files under DATA_DIR in the embedded default, any S3 API otherwise
 * (VIDEO_STORE_URL); the adapters are in src/stores. Keys are ours (`results/<task id>`), never a client's text.
 */
export interface ObjectStore {
  /** For logs and the console: `local <dir>` or `s3://bucket/prefix`; never a credential. */
  readonly description: string;
  /** Stores the stream under `key`, replacing what was there; resolves with the bytes written. */
  put(key: string, body: Readable, meta: { contentType: string; size?: number }, signal?: AbortSignal): Promise<number>;
  /** The bytes of `key` from `range.start` to `range.end` (inclusive), or all of them; null when absent. */
  get(key: string, range?: { start: number; end: number }): Promise<Readable | null>;
  /** Absent keys are not an error. */
  delete(key: string): Promise<void>;
}

export const resultKey = (taskId: string) => `results/${encodeURIComponent(taskId)}`;
export const inputKey = (taskId: string) => `inputs/${encodeURIComponent(taskId)}`;
