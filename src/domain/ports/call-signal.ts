/**
 * What an upstream call reads of its cancellation: the part of AbortSignal it uses, so an AbortSignal is one (a
 * Temporal activity's, a WebSocket's) and so is CallAbort, the one-shot flag each relayed HTTP call gets.
 */
export interface CallSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A call's abort, fired when its client goes away. Not an AbortController: in Node 20 the first listener on a new
 * AbortSignal costs several microseconds (bench/RESULTS.md, relay), and every relayed call made one. Listeners run
 * once, in the order added; one added after the abort never runs, as `aborted` says.
 */
export class CallAbort implements CallSignal {
  aborted = false;
  private listeners: Array<() => void> | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.listeners!.splice(at, 1);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners ?? [];
    this.listeners = null;
    for (const listener of listeners) listener();
  }
}
