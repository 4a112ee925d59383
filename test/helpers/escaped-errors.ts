/**
 * Errors that escaped every request in this test file's process: an 'error' event without a listener, a rejected
 * promise nobody awaited. In production either ends the gateway; in a test the gateway runs inside jest's process,
 * which would only print them. Recorded here, so the test can assert there were none.
 */
export function recordEscapedErrors(): { errors: unknown[]; stop(): void } {
  const errors: unknown[] = [];
  const onError = (err: unknown) => errors.push(err);
  process.on('uncaughtException', onError);
  process.on('unhandledRejection', onError);
  return {
    errors,
    stop() {
      process.off('uncaughtException', onError);
      process.off('unhandledRejection', onError);
    },
  };
}
