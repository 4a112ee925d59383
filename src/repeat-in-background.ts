/**
 * Runs `task` every `intervalMs` (and at once with `now`), never two runs at a time, until stopped: the sweeps a
 * process keeps up beside its requests. A failed run is reported and the next tick tries again; a run that found
 * work says how much. `first` settles when the run started at once has ended (at once without `now`).
 */
export function repeatInBackground(
  task: () => Promise<number>,
  opts: { intervalMs: number; now?: boolean; onError?: (err: unknown) => void; onDone?: (n: number) => void },
): { first: Promise<void>; stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const run = (): Promise<void> => {
    running ??= task()
      .then((n) => {
        if (n > 0) opts.onDone?.(n);
      })
      .catch((err: unknown) => opts.onError?.(err))
      .finally(() => {
        running = null;
      });
    return running;
  };
  const first = opts.now ? run() : Promise.resolve();
  const timer = setInterval(run, opts.intervalMs);
  timer.unref();
  return {
    first,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
