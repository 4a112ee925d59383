import type { Pool, PoolClient } from 'pg';
import type { VideoFamily } from './validation';

type Db = Pool | PoolClient;

/** Where a completed task's file is served from: our stored copy when there is one, else the upstream's link. */
export interface VideoResultSource {
  taskId: string;
  family: VideoFamily;
  channel: string;
  status: string;
  /** The upstream's file (never shown to clients). */
  assetUrl: string | null;
  stored: { key: string; bytes: number; contentType: string } | null;
  /** Retention removed the copy. */
  deleted: boolean;
}

export async function videoResultSource(db: Db, taskId: string): Promise<VideoResultSource | null> {
  const res = await db.query<{
    id: string; family: VideoFamily; channel: string; status: string; asset_url: string | null;
    result_key: string | null; result_bytes: string | null; result_type: string | null; result_deleted_at: Date | null;
  }>('SELECT id, family, channel, status, asset_url, result_key, result_bytes, result_type, result_deleted_at FROM video_tasks WHERE id = $1', [taskId]);
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
}

/** Stored copies older than the retention, oldest first. */
export async function expiredResults(db: Db, retentionSeconds: number, limit: number): Promise<Array<{ taskId: string; key: string }>> {
  const res = await db.query<{ id: string; result_key: string }>(
    `SELECT id, result_key FROM video_tasks
     WHERE result_key IS NOT NULL AND result_stored_at < now() - make_interval(secs => $1::double precision)
     ORDER BY result_stored_at LIMIT $2`,
    [retentionSeconds, limit],
  );
  return res.rows.map((r) => ({ taskId: r.id, key: r.result_key }));
}

export async function markResultsDeleted(db: Db, taskIds: string[]): Promise<void> {
  await db.query('UPDATE video_tasks SET result_key = NULL, result_deleted_at = now() WHERE id = ANY($1::text[])', [taskIds]);
}

/** For /metrics and the console: copies kept now, completions that fell back to the upstream's link, copies expired. */
export async function resultCounts(db: Db): Promise<{ stored: number; fallback: number; deleted: number; storedBytes: number }> {
  const res = await db.query<{ stored: string; fallback: string; deleted: string; bytes: string | null }>(
    `SELECT count(*) FILTER (WHERE result_key IS NOT NULL) AS stored,
            count(*) FILTER (WHERE result_fallback IS NOT NULL) AS fallback,
            count(*) FILTER (WHERE result_deleted_at IS NOT NULL) AS deleted,
            sum(result_bytes) FILTER (WHERE result_key IS NOT NULL) AS bytes
     FROM video_tasks WHERE status = 'completed'`,
  );
  const r = res.rows[0];
  return { stored: Number(r.stored), fallback: Number(r.fallback), deleted: Number(r.deleted), storedBytes: Number(r.bytes ?? 0) };
}

/** The first frame a submit uploaded: where it is kept, and what it is (the worker sends it upstream). */
export async function recordVideoInput(db: Db, taskId: string, r: { key: string; contentType: string; filename: string }): Promise<void> {
  await db.query('UPDATE video_tasks SET input_key = $2, input_type = $3, input_name = $4 WHERE id = $1', [taskId, r.key, r.contentType, r.filename]);
}
