/**
 * Waits for a state the code under test reaches on its own, instead of sleeping a fixed time before asserting:
 * a fixed sleep is either longer than needed or, on a loaded machine, too short.
 *
 * Calls `condition` every `intervalMs` until it returns a truthy value, and returns that value. A condition that
 * throws counts as not met yet (so it may use `expect`); past `timeoutMs` this throws, naming `message` and the
 * last error the condition threw.
 */
export async function waitFor<T>(
  condition: () => T | PromiseLike<T>,
  opts: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<Truthy<T>> {
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const intervalMs = opts.intervalMs ?? 25;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as Truthy<T>;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const cause = lastError === undefined ? '' : `; last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.message ?? 'a condition'}${cause}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

type Truthy<T> = Exclude<T, false | 0 | 0n | '' | null | undefined>;
