import { createHash, randomBytes } from 'node:crypto';

/** Ids of batch inference, in the shapes the two APIs use. */

/** `file-<24 hex>`: never `video`, so it never meets the signed video links under /v1/files/video/. */
export const newFileId = () => `file-${randomBytes(12).toString('hex')}`;

export const newOpenAiBatchId = () => `batch_${randomBytes(16).toString('hex')}`;

export const newAnthropicBatchId = () => `msgbatch_${randomBytes(16).toString('hex')}`;

/** The output or error file of a batch: the same id whichever attempt writes it, so a retried finalize writes one. */
export const batchFileId = (batchId: string, kind: 'output' | 'error') =>
  `file-${createHash('sha256').update(`${batchId}:${kind}`).digest('hex').slice(0, 24)}`;

/** A line's business key in the holds and the ledger: billed at most once whatever reruns it. */
export const lineRequestId = (batchId: string, customId: string) => `${batchId}:${customId}`;

/** The id of a line's entry in OpenAI's output and error files. */
export const lineEntryId = (batchId: string, idx: number) => `batch_req_${createHash('sha256').update(`${batchId}:${idx}`).digest('hex').slice(0, 24)}`;

export const nowSeconds = () => Math.floor(Date.now() / 1000);
