import { repeatInBackground } from '../../src/repeat-in-background';

/** Resolves once `cond` holds (checked every 5 ms), failing after 5 s: no fixed sleep to outlast a slow machine. */
async function until(cond: () => boolean): Promise<void> {
  for (const end = Date.now() + 5000; !cond(); ) {
    if (Date.now() > end) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The background sweeps' loop: one run at a time, errors reported and retried, stop waits for the run in flight. */
describe('repeatInBackground', () => {
  it('runs at once with `now`, never two runs at a time, and stop waits for the one in flight', async () => {
    let runs = 0;
    let inFlight = 0;
    let most = 0;
    const found: number[] = [];
    const loop = repeatInBackground(
      async () => {
        runs++;
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 25));
        inFlight--;
        return runs % 2;
      },
      { intervalMs: 5, now: true, onDone: (n) => found.push(n) },
    );
    await loop.first;
    expect(runs).toBe(1);
    await until(() => runs >= 3 && inFlight === 1);
    await loop.stop();
    const after = runs;
    await new Promise((r) => setTimeout(r, 30));
    expect(runs).toBe(after);
    expect(most).toBe(1);
    expect(inFlight).toBe(0);
    // Only runs that found work are reported.
    expect(found.every((n) => n === 1)).toBe(true);
    expect(found.length).toBe(Math.ceil(runs / 2));
  });

  it('without `now` waits for the first tick; a failed run is reported and the next one tries again', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const loop = repeatInBackground(
      async () => {
        runs++;
        if (runs === 1) throw new Error('database away');
        return 0;
      },
      { intervalMs: 10, onError: (err) => errors.push(err) },
    );
    await loop.first;
    expect(runs).toBe(0);
    await until(() => runs >= 2);
    await loop.stop();
    expect(errors).toEqual([new Error('database away')]);
  });
});
