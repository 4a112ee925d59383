/**
 * The lines a worker process has in flight, across all its batches (BATCH_CONCURRENCY): a counting semaphore, first
 * come first served.
 */
export class LineSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  async acquire(signal?: AbortSignal): Promise<boolean> {
    if (this.free > 0) {
      this.free--;
      return true;
    }
    return new Promise<boolean>((resolve) => {
      const grant = () => {
        signal?.removeEventListener('abort', abort);
        resolve(true);
      };
      const abort = () => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(false);
      };
      signal?.addEventListener('abort', abort, { once: true });
      this.waiting.push(grant);
    });
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
