import type { VideoTaskRepository } from '../ports/video-tasks';

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

export function createProgressWriter(tasks: Pick<VideoTaskRepository, 'recordProgressOf'>, opts: { intervalMs?: number; onError?: (err: unknown) => void } = {}): ProgressWriter {
  const intervalMs = opts.intervalMs ?? 1000;
  let pending = new Map<string, { status: string; progress: number }>();
  let writing: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (pending.size === 0) return writing;
    const batch = pending;
    pending = new Map();
    const updates = [...batch].map(([id, p]) => ({ id, ...p }));
    writing = writing
      .then(() => tasks.recordProgressOf(updates))
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
