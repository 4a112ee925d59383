import { Readable } from 'node:stream';
import type { ObjectStore } from '../ports/object-store';
import { type BatchRecord, isEnded } from './batch-record';
import type { LineRecord } from '../ports/batches';
import type { Repositories } from '../ports/repositories';
import { objectKeyOf } from './files';
import { batchFileId, lineEntryId, nowSeconds } from './ids';

/**
 * A batch's end: lines never sent end `canceled` (a cancel) or `expired` (past the completion window), the OpenAI
 * output and error files are written, and the batch gets its final status, its `usage` counted from its ledger rows and its
 * timestamps. Run again (a retried activity), it writes the same files under the same ids and changes nothing else.
 */

export interface FinalizeDeps {
  repos: Pick<Repositories, 'batches' | 'batchFiles'>;
  store: ObjectStore;
  /** How long output and error files are kept (BATCH_FILE_RETENTION_DAYS). */
  retentionSeconds: number;
}

type LineRow = LineRecord;

async function* lines(deps: FinalizeDeps, batchId: string, states: string[]): AsyncGenerator<LineRow[]> {
  for (let after = -1; ; ) {
    const page = await deps.repos.batches.linesIn(batchId, states, after, 1000);
    if (page.length === 0) return;
    yield page;
    after = page[page.length - 1].idx;
  }
}

const NOT_SENT: Record<string, { code: string; message: string }> = {
  canceled: { code: 'batch_cancelled', message: 'The batch was cancelled before this request was sent.' },
  expired: { code: 'batch_expired', message: 'The batch expired before this request was sent.' },
};

/** One line of OpenAI's output or error file. */
function entryOf(batchId: string, l: LineRow): string {
  const notSent = NOT_SENT[l.state];
  const entry = notSent
    ? { id: lineEntryId(batchId, l.idx), custom_id: l.custom_id, response: null, error: notSent }
    : { id: lineEntryId(batchId, l.idx), custom_id: l.custom_id, response: { status_code: l.status_code ?? 500, request_id: l.request_id, body: l.result }, error: null };
  return `${JSON.stringify(entry)}\n`;
}

async function writeFile(deps: FinalizeDeps, b: BatchRecord, kind: 'output' | 'error', states: string[]): Promise<string | null> {
  if (!(await deps.repos.batches.hasLinesIn(b.id, states))) return null;
  const id = batchFileId(b.id, kind);
  const source = Readable.from(
    (async function* () {
      for await (const page of lines(deps, b.id, states)) yield Buffer.from(page.map((l) => entryOf(b.id, l)).join(''));
    })(),
  );
  const bytes = await deps.store.put(objectKeyOf(id), source, { contentType: 'application/jsonl' });
  const now = nowSeconds();
  await deps.repos.batchFiles.upsertOutput({
    id, accountId: b.accountId, filename: `batch_${b.id}_${kind}.jsonl`, bytes, objectKey: objectKeyOf(id), createdAt: now, expiresAt: now + deps.retentionSeconds,
  });
  return id;
}

export async function finalizeBatch(deps: FinalizeDeps, batchId: string): Promise<{ status: string; api: string } | null> {
  const { batches } = deps.repos;
  let b = await batches.get(batchId);
  if (!b) return null;
  if (isEnded(b.status)) return { status: b.status, api: b.api };
  const now = nowSeconds();
  const cancelled = b.status === 'cancelling';
  if (!cancelled) await batches.markFinalizing(batchId, now);
  const expired = !cancelled && now >= b.expiresAt;
  const notSent = cancelled ? 'canceled' : expired ? 'expired' : null;
  if (notSent) await batches.endUnsent(batchId, notSent);
  b = (await batches.get(batchId))!;
  const output = b.api === 'openai' ? await writeFile(deps, b, 'output', ['succeeded']) : null;
  const errors = b.api === 'openai' ? await writeFile(deps, b, 'error', ['failed', 'canceled', 'expired']) : null;
  const status = cancelled ? 'cancelled' : expired ? 'expired' : 'completed';
  await batches.end(batchId, { status, at: nowSeconds(), outputFileId: output, errorFileId: errors });
  return { status, api: b.api };
}
