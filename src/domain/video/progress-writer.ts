import type { Pool } from 'pg';

/**
 * Progress of running tasks, written in batches: thousands of tasks polled every few seconds would otherwise be one
 * UPDATE (and one wake-up of a database backend) per poll. Each flush writes the latest state of every task that
 * changed since the last one in a single statement; a finished task is never changed back.
 */
export interface ProgressWriter {
  record(taskId: string, status: 'queued' | 'processing', progress: number): void;
  /** Writes what is pending now. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export function createProgressWriter(db: Pool, opts: { intervalMs?: number; onError?: (err: unknown) => void } = {}): ProgressWriter {
  const intervalMs = opts.intervalMs ?? 1000;
  let pending = new Map<string, { status: string; progress: number }>();
  let writing: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (pending.size === 0) return writing;
    const batch = pending;
    pending = new Map();
    const ids = [...batch.keys()];
    const statuses = ids.map((id) => batch.get(id)!.status);
    const progress = ids.map((id) => batch.get(id)!.progress);
    writing = writing
      .then(() =>
        db.query(
          `UPDATE video_tasks t SET status = u.status, progress = GREATEST(t.progress, u.progress), updated_at = now()
           FROM unnest($1::text[], $2::text[], $3::int[]) AS u(id, status, progress)
           WHERE t.id = u.id AND t.finished_at IS NULL`,
          [ids, statuses, progress],
        ),
      )
      .then(
        () => undefined,
        (err) => opts.onError?.(err),
      );
    return writing;
  }

  const timer = setInterval(() => void flush(), intervalMs);
  timer.unref();
  return {
    record(taskId, status, progress) {
      pending.set(taskId, { status, progress });
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
