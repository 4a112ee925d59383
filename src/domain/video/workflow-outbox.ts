import { AsyncResource } from 'node:async_hooks';
import type { VideoTaskRepository } from '../ports/video-tasks';
import type { VideoTask } from './tasks';

/**
 * Starts the workflows of submitted video tasks after their submit was answered (docs/decisions/0033-video-submit-answer-first.md, "Video submit:
 * answer first, start after"). The task row and its hold are committed before the answer, so a task is never lost:
 * a start that fails here, or never happened because the process died, is made by the reconciler, which looks for
 * tasks of its task queue that are older than `graceMs` and still not started. Starting is idempotent (workflow
 * `video:<task id>`, REJECT_DUPLICATE), so two processes starting one task do no harm.
 */
export interface VideoWorkflowOutbox {
  /** Queues the start of this task's workflow (at most `concurrency` starts at a time). */
  kick(task: VideoTask): void;
  /** Starts it now (before a cancel signal, which needs the workflow). */
  startNow(task: VideoTask): Promise<void>;
  /** One reconciler pass; resolves with how many tasks it queued. */
  reconcile(): Promise<number>;
  /** A reconciler pass now, unless one is running (a NOTIFY of new submits). */
  reconcileSoon(): void;
  /** Resolves once no start is queued or running. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export interface OutboxOptions {
  /**
   * Starts nothing by itself: no kick after a submit, no reconciler. An api-only process (`gateway api`) runs so;
   * the workers' outboxes start its tasks, told by NOTIFY (./submit-listener.ts). The grpc work of a start then
   * runs beside the workflows rather than beside the answers, which keeps submit latency low.
   */
  passive?: boolean;
  /** How often the reconciler looks (default 10 s). */
  reconcileMs?: number;
  /** A task this young is left to the process that accepted it (default 5 s). */
  graceMs?: number;
  concurrency?: number;
  onError?: (err: unknown, taskId: string) => void;
}

export function createVideoWorkflowOutbox(deps: {
  tasks: Pick<VideoTaskRepository, 'markWorkflowsStarted' | 'unstarted'>;
  taskQueue: string;
  start: (task: VideoTask) => Promise<void>;
  options?: OutboxOptions;
}): VideoWorkflowOutbox {
  const { tasks, taskQueue, start } = deps;
  const opts = deps.options ?? {};
  // Starts drain at Temporal's pace whatever this is; a few at a time leave the process's core to the answers.
  const concurrency = opts.concurrency ?? 4;
  const graceMs = opts.graceMs ?? 5_000;
  // Each start runs in the async context of its kick (AsyncResource.bind): the submit's request, so a trace of
  // it (src/observability/tracing.ts) carries on into the workflow even when the start waited its turn.
  const waiting: Array<{ task: VideoTask; start: () => Promise<void> }> = [];
  const queued = new Set<string>();
  let running = 0;
  let closed = false;
  let idleWaiters: Array<() => void> = [];

  // Started tasks are marked in batches: one UPDATE for every start that finished while the previous one ran,
  // not a statement (and a cross-core wake-up of a database backend) per task.
  let marking: Promise<void> | null = null;
  let next: { ids: string[]; done: Promise<void> } | null = null;
  function markStarted(id: string): Promise<void> {
    if (!next) {
      const batch: { ids: string[]; done: Promise<void> } = { ids: [], done: Promise.resolve() };
      batch.done = (async () => {
        await marking?.catch(() => undefined);
        if (next === batch) next = null;
        marking = tasks.markWorkflowsStarted(batch.ids);
        await marking;
      })();
      next = batch;
    }
    next.ids.push(id);
    return next.done;
  }

  async function startAndMark(task: VideoTask): Promise<void> {
    await start(task);
    await markStarted(task.id);
  }

  function pump(): void {
    while (running < concurrency && waiting.length > 0) {
      const { task, start: startQueued } = waiting.shift()!;
      running++;
      startQueued()
        .catch((err) => opts.onError?.(err, task.id))
        .finally(() => {
          running--;
          queued.delete(task.id);
          pump();
          if (running === 0 && waiting.length === 0) {
            const waiters = idleWaiters;
            idleWaiters = [];
            for (const w of waiters) w();
          }
        });
    }
  }

  function kick(task: VideoTask): void {
    if (closed || opts.passive || queued.has(task.id)) return;
    queued.add(task.id);
    waiting.push({ task, start: AsyncResource.bind(() => startAndMark(task)) });
    pump();
  }

  async function reconcile(): Promise<number> {
    if (closed) return 0;
    const unstarted = await tasks.unstarted(taskQueue, graceMs, 500);
    let n = 0;
    for (const t of unstarted) {
      if (queued.has(t.id)) continue;
      kick(t);
      n++;
    }
    return n;
  }

  let pass: Promise<unknown> | null = null;
  let again = false;
  const tick = () => {
    // A call while a pass runs asks for one more pass after it (tasks submitted since its query).
    if (pass) {
      again = true;
      return;
    }
    pass = reconcile()
      .catch((err) => opts.onError?.(err, '*'))
      .finally(() => {
        pass = null;
        if (again && !closed) {
          again = false;
          tick();
        }
      });
  };
  const timer = opts.passive ? undefined : setInterval(tick, opts.reconcileMs ?? 10_000);
  timer?.unref();
  // Soon after start-up: what a process that died left unstarted.
  const first = opts.passive ? undefined : setTimeout(tick, Math.min(graceMs, 1_000));
  first?.unref();

  return {
    kick,
    startNow: startAndMark,
    reconcile,
    reconcileSoon: tick,
    idle: () => (running === 0 && waiting.length === 0 ? Promise.resolve() : new Promise<void>((r) => idleWaiters.push(r))),
    async close() {
      closed = true;
      clearInterval(timer);
      clearTimeout(first);
      await pass;
      if (running > 0 || waiting.length > 0) await new Promise<void>((r) => idleWaiters.push(r));
    },
  };
}
