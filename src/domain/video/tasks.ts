import type { Pool, PoolClient } from 'pg';
import type { VideoFamily } from './validation';

/** The row of a video task (table video_tasks), as the domain reads it. */
export interface VideoTask {
  id: string;
  family: VideoFamily;
  accountId: number;
  tokenId: number | null;
  tokenName: string;
  model: string;
  prompt: string;
  request: Record<string, unknown>;
  channel: string;
  status: VideoStatus;
  progress: number;
  upstreamId: string | null;
  quota: number;
  billed: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  duration: number | null;
  resolution: string | null;
  callbackUrl: string | null;
  /** The origin the client submitted to: its links, in a webhook, point there. */
  publicOrigin: string | null;
  requestId: string;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  /** When its workflow was started (null: not yet; the outbox starter or the reconciler will). */
  workflowStartedAt: Date | null;
  /** A first frame the client uploaded (`-fl` models): its object key, type and file name. */
  input: { key: string; contentType: string; filename: string } | null;
  /** Where its finished file is: stored (since when), fallen back to the upstream's link (why), or deleted by retention. */
  result: { storedAt: Date | null; fallback: string | null; deletedAt: Date | null };
}

/** The gateway's own states; each family's view names them in its own words. */
export type VideoStatus = 'queued' | 'processing' | 'completed' | 'failed';

type Db = Pool | PoolClient;

interface Row {
  id: string;
  family: VideoFamily;
  account_id: string;
  token_id: string | null;
  token_name: string;
  model: string;
  prompt: string;
  request: Record<string, unknown>;
  channel: string;
  status: VideoStatus;
  progress: number;
  upstream_id: string | null;
  quota: string;
  billed: string | null;
  error_code: string | null;
  error_message: string | null;
  duration: number | null;
  resolution: string | null;
  callback_url: string | null;
  public_origin: string | null;
  request_id: string;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  workflow_started_at: Date | null;
  result_stored_at?: Date | null;
  result_fallback?: string | null;
  result_deleted_at?: Date | null;
  input_key?: string | null;
  input_type?: string | null;
  input_name?: string | null;
}

function toTask(r: Row): VideoTask {
  return {
    id: r.id,
    family: r.family,
    accountId: Number(r.account_id),
    tokenId: r.token_id === null ? null : Number(r.token_id),
    tokenName: r.token_name,
    model: r.model,
    prompt: r.prompt,
    request: r.request,
    channel: r.channel,
    status: r.status,
    progress: r.progress,
    upstreamId: r.upstream_id,
    quota: Number(r.quota),
    billed: r.billed === null ? null : Number(r.billed),
    errorCode: r.error_code,
    errorMessage: r.error_message,
    duration: r.duration,
    resolution: r.resolution,
    callbackUrl: r.callback_url,
    publicOrigin: r.public_origin,
    requestId: r.request_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
    workflowStartedAt: r.workflow_started_at,
    input: r.input_key ? { key: r.input_key, contentType: r.input_type ?? 'application/octet-stream', filename: r.input_name ?? 'input_reference' } : null,
    result: { storedAt: r.result_stored_at ?? null, fallback: r.result_fallback ?? null, deletedAt: r.result_deleted_at ?? null },
  };
}

/** A task row as `to_jsonb` gives it (the video_submit function): timestamps arrive as text. */
export function videoTaskFromJson(j: Record<string, unknown>): VideoTask {
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  return toTask({
    ...(j as unknown as Row),
    created_at: date(j.created_at) as Date,
    updated_at: date(j.updated_at) as Date,
    finished_at: date(j.finished_at),
    workflow_started_at: date(j.workflow_started_at),
    result_stored_at: date(j.result_stored_at),
    result_deleted_at: date(j.result_deleted_at),
  });
}

/** The columns of a new task, as video_task_insert (migration 010) takes them. */
export interface NewVideoTask {
  id: string;
  family: VideoFamily;
  account: number;
  token: number;
  token_name: string;
  model: string;
  prompt: string;
  request: Record<string, unknown>;
  channel: string;
  amount: number;
  callback_url: string | null;
  idempotency_key: string | null;
  request_id: string;
  public_origin: string | null;
  task_queue: string;
}

/** A task just inserted from `t` (video_task_insert answers a created task with its created_at only). */
export function insertedVideoTask(t: NewVideoTask, createdAt: Date): VideoTask {
  return {
    id: t.id,
    family: t.family,
    accountId: t.account,
    tokenId: t.token,
    tokenName: t.token_name,
    model: t.model,
    prompt: t.prompt,
    request: t.request,
    channel: t.channel,
    status: 'queued',
    progress: 0,
    upstreamId: null,
    quota: t.amount,
    billed: null,
    errorCode: null,
    errorMessage: null,
    duration: null,
    resolution: null,
    callbackUrl: t.callback_url,
    publicOrigin: t.public_origin,
    requestId: t.request_id,
    createdAt,
    updatedAt: createdAt,
    finishedAt: null,
    workflowStartedAt: null,
    input: null,
    result: { storedAt: null, fallback: null, deletedAt: null },
  };
}

/** The task of this account with this id and family, or null (another account's task reads as absent). */
export async function findVideoTask(db: Db, accountId: number, id: string, family?: VideoFamily): Promise<VideoTask | null> {
  const res = await db.query<Row>('SELECT * FROM video_tasks WHERE id = $1 AND account_id = $2', [id, accountId]);
  const task = res.rows[0] ? toTask(res.rows[0]) : null;
  return task && (family === undefined || task.family === family) ? task : null;
}

export async function getVideoTask(db: Db, id: string): Promise<VideoTask | null> {
  const res = await db.query<Row>('SELECT * FROM video_tasks WHERE id = $1', [id]);
  return res.rows[0] ? toTask(res.rows[0]) : null;
}

/** Its workflow is running (or ran): the reconciler leaves it alone. */
export async function markVideoWorkflowsStarted(db: Db, ids: string[]): Promise<void> {
  await db.query('UPDATE video_tasks SET workflow_started_at = now() WHERE id = ANY($1::text[]) AND workflow_started_at IS NULL', [ids]);
}

/** Tasks of `taskQueue` submitted at least `olderThanMs` ago whose workflow was never started, oldest first. */
export async function unstartedVideoTasks(db: Db, taskQueue: string, olderThanMs: number, limit: number): Promise<VideoTask[]> {
  const res = await db.query<Row>(
    `SELECT * FROM video_tasks
     WHERE task_queue = $1 AND workflow_started_at IS NULL AND finished_at IS NULL
       AND created_at <= now() - make_interval(secs => $2::double precision / 1000)
     ORDER BY created_at LIMIT $3`,
    [taskQueue, olderThanMs, limit],
  );
  return res.rows.map(toTask);
}

/** Progress of a running task; a finished task is never changed back. */
export async function recordVideoProgress(
  db: Db,
  id: string,
  p: { status: 'queued' | 'processing'; progress: number; upstreamId?: string },
): Promise<void> {
  await db.query(
    `UPDATE video_tasks SET status = $2, progress = GREATEST(progress, $3), upstream_id = COALESCE($4, upstream_id), updated_at = now()
     WHERE id = $1 AND finished_at IS NULL`,
    [id, p.status, p.progress, p.upstreamId ?? null],
  );
}

export type VideoOutcome =
  | { status: 'completed'; duration: number | null; resolution: string | null; billed: number }
  | { status: 'failed'; errorCode: string; errorMessage: string };

/** Records the terminal state once (a repeat of the same finish is a no-op). */
export async function finishVideoTask(db: Db, id: string, o: VideoOutcome): Promise<void> {
  if (o.status === 'completed') {
    await db.query(
      `UPDATE video_tasks SET status = 'completed', progress = 100, duration = $2, resolution = $3, billed = $4,
              updated_at = now(), finished_at = now()
       WHERE id = $1 AND finished_at IS NULL`,
      [id, o.duration, o.resolution, o.billed],
    );
    return;
  }
  await db.query(
    `UPDATE video_tasks SET status = 'failed', error_code = $2, error_message = $3, updated_at = now(), finished_at = now()
     WHERE id = $1 AND finished_at IS NULL`,
    [id, o.errorCode, o.errorMessage],
  );
}

/**
 * What the upstream finished: where it serves the file (kept out of workflow history and of every response), its
 * length and size, and where our copy of it is (or why there is none). One write; the task becomes `completed`
 * only when its hold is settled (finishVideoTask).
 */
export async function recordVideoResult(
  db: Db,
  id: string,
  r: { assetUrl: string; duration: number | null; resolution: string | null; stored?: { key: string; bytes: number; contentType: string }; fallback?: string },
): Promise<void> {
  await db.query(
    `UPDATE video_tasks SET asset_url = $2, duration = $3, resolution = $4,
            result_key = COALESCE($5, result_key), result_bytes = COALESCE($6, result_bytes), result_type = COALESCE($7, result_type),
            result_stored_at = CASE WHEN $5::text IS NULL THEN result_stored_at ELSE now() END,
            result_fallback = CASE WHEN $5::text IS NULL AND result_key IS NULL THEN $8 ELSE NULL END
     WHERE id = $1`,
    [id, r.assetUrl, r.duration, r.resolution, r.stored?.key ?? null, r.stored?.bytes ?? null, r.stored?.contentType ?? null, r.fallback?.slice(0, 300) ?? null],
  );
}

export interface VideoTaskFilters {
  status?: VideoStatus;
  model?: string;
  family?: VideoFamily;
  /** Unix seconds, inclusive, on the created time. */
  startTimestamp?: number;
  endTimestamp?: number;
}

/** An account's tasks, newest first, filtered and paged. */
export async function listVideoTasks(
  db: Db,
  accountId: number,
  f: VideoTaskFilters,
  page: { offset: number; limit: number },
): Promise<{ items: VideoTask[]; total: number }> {
  const where = ['account_id = $1'];
  const args: unknown[] = [accountId];
  const add = (sql: string, v: unknown) => {
    args.push(v);
    where.push(sql.replace('?', `$${args.length}`));
  };
  if (f.status) add('status = ?', f.status);
  if (f.model) add('model = ?', f.model);
  if (f.family) add('family = ?', f.family);
  if (f.startTimestamp !== undefined) add('created_at >= to_timestamp(?)', f.startTimestamp);
  if (f.endTimestamp !== undefined) add('created_at < to_timestamp(?) + interval \'1 second\'', f.endTimestamp);
  const sql = where.join(' AND ');
  const total = await db.query<{ n: string }>(`SELECT count(*) AS n FROM video_tasks WHERE ${sql}`, args);
  const rows = await db.query<Row>(
    `SELECT * FROM video_tasks WHERE ${sql} ORDER BY created_at DESC, id DESC LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
    [...args, page.limit, page.offset],
  );
  return { items: rows.rows.map(toTask), total: Number(total.rows[0].n) };
}
