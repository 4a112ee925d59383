import type { Pool } from 'pg';
import type { VideoStatus, VideoTask } from '../../domain/video/tasks';
import type { VideoFamily } from '../../domain/video/validation';
import type { VideoTaskRepository } from '../../domain/ports/video-tasks';
import { on } from './queryable';

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
function videoTaskFromJson(j: Record<string, unknown>): VideoTask {
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

export function createVideoTaskRepository(db: Pool): VideoTaskRepository {
  return {
    async find(accountId, id) {
      const res = await db.query<Row>('SELECT * FROM video_tasks WHERE id = $1 AND account_id = $2', [id, accountId]);
      return res.rows[0] ? toTask(res.rows[0]) : null;
    },

    async get(id, tx) {
      const res = await on(db, tx).query<Row>('SELECT * FROM video_tasks WHERE id = $1', [id]);
      return res.rows[0] ? toTask(res.rows[0]) : null;
    },

    fromSubmitted: videoTaskFromJson,

    async markWorkflowsStarted(ids) {
      await db.query('UPDATE video_tasks SET workflow_started_at = now() WHERE id = ANY($1::text[]) AND workflow_started_at IS NULL', [ids]);
    },

    async unstarted(taskQueue, olderThanMs, limit) {
      const res = await db.query<Row>(
        `SELECT * FROM video_tasks
         WHERE task_queue = $1 AND workflow_started_at IS NULL AND finished_at IS NULL
           AND created_at <= now() - make_interval(secs => $2::double precision / 1000)
         ORDER BY created_at LIMIT $3`,
        [taskQueue, olderThanMs, limit],
      );
      return res.rows.map(toTask);
    },

    async recordProgress(id, p) {
      await db.query(
        `UPDATE video_tasks SET status = $2, progress = GREATEST(progress, $3), upstream_id = COALESCE($4, upstream_id), updated_at = now()
         WHERE id = $1 AND finished_at IS NULL`,
        [id, p.status, p.progress, p.upstreamId ?? null],
      );
    },

    async recordProgressOf(updates) {
      await db.query(
        `UPDATE video_tasks t SET status = u.status, progress = GREATEST(t.progress, u.progress), updated_at = now()
         FROM unnest($1::text[], $2::text[], $3::int[]) AS u(id, status, progress)
         WHERE t.id = u.id AND t.finished_at IS NULL`,
        [updates.map((u) => u.id), updates.map((u) => u.status), updates.map((u) => u.progress)],
      );
    },

    async finish(id, o, tx) {
      const q = on(db, tx);
      if (o.status === 'completed') {
        await q.query(
          `UPDATE video_tasks SET status = 'completed', progress = 100, duration = $2, resolution = $3, billed = $4,
                  updated_at = now(), finished_at = now()
           WHERE id = $1 AND finished_at IS NULL`,
          [id, o.duration, o.resolution, o.billed],
        );
        return;
      }
      await q.query(
        `UPDATE video_tasks SET status = 'failed', error_code = $2, error_message = $3, updated_at = now(), finished_at = now()
         WHERE id = $1 AND finished_at IS NULL`,
        [id, o.errorCode, o.errorMessage],
      );
    },

    async recordResult(id, r) {
      await db.query(
        `UPDATE video_tasks SET asset_url = $2, duration = $3, resolution = $4,
                result_key = COALESCE($5, result_key), result_bytes = COALESCE($6, result_bytes), result_type = COALESCE($7, result_type),
                result_stored_at = CASE WHEN $5::text IS NULL THEN result_stored_at ELSE now() END,
                result_fallback = CASE WHEN $5::text IS NULL AND result_key IS NULL THEN $8 ELSE NULL END
         WHERE id = $1`,
        [id, r.assetUrl, r.duration, r.resolution, r.stored?.key ?? null, r.stored?.bytes ?? null, r.stored?.contentType ?? null, r.fallback?.slice(0, 300) ?? null],
      );
    },

    async recordInput(id, r) {
      await db.query('UPDATE video_tasks SET input_key = $2, input_type = $3, input_name = $4 WHERE id = $1', [id, r.key, r.contentType, r.filename]);
    },

    async list(accountId, f, page) {
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
      if (f.endTimestamp !== undefined) add("created_at < to_timestamp(?) + interval '1 second'", f.endTimestamp);
      const sql = where.join(' AND ');
      const total = await db.query<{ n: string }>(`SELECT count(*) AS n FROM video_tasks WHERE ${sql}`, args);
      const rows = await db.query<Row>(
        `SELECT * FROM video_tasks WHERE ${sql} ORDER BY created_at DESC, id DESC LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
        [...args, page.limit, page.offset],
      );
      return { items: rows.rows.map(toTask), total: Number(total.rows[0].n) };
    },

    async resultSource(id) {
      const res = await db.query<{
        id: string; family: VideoFamily; channel: string; status: string; asset_url: string | null;
        result_key: string | null; result_bytes: string | null; result_type: string | null; result_deleted_at: Date | null;
      }>('SELECT id, family, channel, status, asset_url, result_key, result_bytes, result_type, result_deleted_at FROM video_tasks WHERE id = $1', [id]);
      const r = res.rows[0];
      if (!r) return null;
      return {
        taskId: r.id,
        family: r.family,
        channel: r.channel,
        status: r.status,
        assetUrl: r.asset_url,
        stored: r.result_key ? { key: r.result_key, bytes: Number(r.result_bytes), contentType: r.result_type ?? 'application/octet-stream' } : null,
        deleted: r.result_deleted_at !== null,
      };
    },

    async expiredResults(retentionSeconds, limit) {
      const res = await db.query<{ id: string; result_key: string }>(
        `SELECT id, result_key FROM video_tasks
         WHERE result_key IS NOT NULL AND result_stored_at < now() - make_interval(secs => $1::double precision)
         ORDER BY result_stored_at LIMIT $2`,
        [retentionSeconds, limit],
      );
      return res.rows.map((r) => ({ taskId: r.id, key: r.result_key }));
    },

    async markResultsDeleted(ids) {
      await db.query('UPDATE video_tasks SET result_key = NULL, result_deleted_at = now() WHERE id = ANY($1::text[])', [ids]);
    },

    async resultCounts() {
      const res = await db.query<{ stored: string; fallback: string; deleted: string; bytes: string | null }>(
        `SELECT count(*) FILTER (WHERE result_key IS NOT NULL) AS stored,
                count(*) FILTER (WHERE result_fallback IS NOT NULL) AS fallback,
                count(*) FILTER (WHERE result_deleted_at IS NOT NULL) AS deleted,
                sum(result_bytes) FILTER (WHERE result_key IS NOT NULL) AS bytes
         FROM video_tasks WHERE status = 'completed'`,
      );
      const r = res.rows[0];
      return { stored: Number(r.stored), fallback: Number(r.fallback), deleted: Number(r.deleted), storedBytes: Number(r.bytes ?? 0) };
    },
  };
}
