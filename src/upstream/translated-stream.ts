/**
 * A stream made by translating another: iterating runs `events`; cancelling drops the upstream connection and ends
 * the generator (so its `finally` blocks run), whichever side stops first.
 */
export function translatedStream<E>(events: AsyncGenerator<E>, upstream: { cancel(): void }): AsyncIterable<E> & { cancel(): void } {
  return {
    [Symbol.asyncIterator]: () => events,
    cancel() {
      upstream.cancel();
      void events.return(undefined).catch(() => undefined);
    },
  };
}
