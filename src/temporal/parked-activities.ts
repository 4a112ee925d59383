import { ActivityCancelledError, ActivityNotFoundError, ActivityPausedError, ActivityResetError, type AsyncCompletionClient } from '@temporalio/client';

/**
 * Activities that mostly wait (a video task polls its upstream for minutes), run by this process instead of held
 * by the Temporal SDK. The activity hands its task token here and completes asynchronously (CompleteAsyncError):
 * the SDK keeps tens of KiB per running activity (its context, logger, streams and the core's own record), which
 * at thousands in flight is most of a worker's memory; a parked run is its own work and a timer entry.
 *
 * The same rules as a running activity:
 * - Heartbeats every `heartbeatEveryMs` through the client, so a lost process is noticed at the heartbeat timeout
 *   and the activity is retried elsewhere.
 * - A cancel (or pause, or reset) heard on a heartbeat aborts the run's signal; its end is reported as cancelled.
 *   An activity the server no longer knows (timed out, its workflow gone) aborts the run and reports nothing.
 * - The result or the failure (`failure` maps the run's errors, as the activity would have thrown them) is
 *   reported once the run settles.
 * - close() aborts what still runs and fails those activities at once, so another worker takes them over without
 *   waiting for the heartbeat timeout.
 */

export type ParkedWork<T> = (signal: AbortSignal, beat: (details?: unknown) => void) => Promise<T>;

export interface ParkedActivities {
  /** Starts `work` for the activity of `taskToken`; false (nothing started) when the process holds its maximum. */
  park<T>(taskToken: Uint8Array, heartbeatEveryMs: number, work: ParkedWork<T>, failure: (err: unknown) => unknown): boolean;
  readonly size: number;
  close(): Promise<void>;
}

interface Parked {
  token: Uint8Array;
  controller: AbortController;
  everyMs: number;
  nextBeatAt: number;
  details: unknown;
  beating: boolean;
  /** Why it stops early: a cancel heard on a heartbeat, the server no longer knowing it, or this process closing. */
  stop: 'cancelled' | 'gone' | 'closing' | null;
}

const TICK_MS = 250;

export function createParkedActivities(
  client: AsyncCompletionClient,
  opts: { max?: number; onError?: (err: unknown, what: string) => void } = {},
): ParkedActivities {
  const max = opts.max ?? 10_000;
  const logError = opts.onError ?? (() => undefined);
  // While the server is unreachable every run's heartbeat fails: one line per kind of failure every 10 s.
  const lastLogged = new Map<string, number>();
  const onError = (err: unknown, what: string) => {
    const now = Date.now();
    if ((lastLogged.get(what) ?? 0) > now - 10_000) return;
    lastLogged.set(what, now);
    logError(err, what);
  };
  const parked = new Set<Parked>();
  const settling = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  function beat(p: Parked): void {
    p.beating = true;
    client
      .heartbeat(p.token, p.details)
      .catch((err: unknown) => {
        if (err instanceof ActivityCancelledError || err instanceof ActivityPausedError || err instanceof ActivityResetError) p.stop ??= 'cancelled';
        else if (err instanceof ActivityNotFoundError) p.stop ??= 'gone';
        else return onError(err, 'heartbeat');
        p.controller.abort(new Error(`activity ${p.stop}`));
      })
      .finally(() => {
        p.beating = false;
      });
  }

  function tick(): void {
    const now = Date.now();
    for (const p of parked) {
      if (p.stop || p.beating || p.nextBeatAt > now) continue;
      p.nextBeatAt = now + p.everyMs;
      beat(p);
    }
  }

  async function report(p: Parked, outcome: { value: unknown } | { error: unknown }, failure: (err: unknown) => unknown): Promise<void> {
    try {
      if (p.stop === 'gone') return;
      if ('value' in outcome) await client.complete(p.token, outcome.value);
      else if (p.stop === 'cancelled') await client.reportCancellation(p.token);
      else await client.fail(p.token, p.stop === 'closing' ? new Error('the worker shut down') : (failure(outcome.error) as Error));
    } catch (err) {
      // Unreported, the activity times out on its heartbeat and is retried; a retry finds what this run wrote.
      if (!(err instanceof ActivityNotFoundError)) onError(err, 'report');
    }
  }

  return {
    get size() {
      return parked.size;
    },

    park(taskToken, heartbeatEveryMs, work, failure) {
      if (closed || parked.size >= max) return false;
      const p: Parked = { token: taskToken, controller: new AbortController(), everyMs: heartbeatEveryMs, nextBeatAt: Date.now() + heartbeatEveryMs, details: undefined, beating: false, stop: null };
      parked.add(p);
      timer ??= setInterval(tick, TICK_MS).unref();
      const done = work(p.controller.signal, (details) => (p.details = details)).then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      const settled = done
        .then((outcome) => {
          parked.delete(p);
          return report(p, outcome, failure);
        })
        .finally(() => {
          settling.delete(settled);
          if (parked.size === 0 && timer) {
            clearInterval(timer);
            timer = null;
          }
        });
      settling.add(settled);
      return true;
    },

    async close() {
      closed = true;
      for (const p of parked) {
        p.stop ??= 'closing';
        p.controller.abort(new Error('the worker is shutting down'));
      }
      await Promise.all([...settling]);
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}
