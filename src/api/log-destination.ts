import pino from 'pino';

/**
 * Standard output for the log lines, written asynchronously in 4 KiB batches instead of one blocking write(2) per
 * line: a synchronous write per request took about a seventh of the relay's CPU time (bench/RESULTS.md, relay).
 * What is still buffered is written out when the process exits, whatever the reason.
 */
export function stdoutLogDestination(): pino.DestinationStream {
  const dest = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  // Standard output gone or full (EIO, ENOSPC): log lines are lost, requests go on.
  dest.on('error', () => undefined);
  process.once('exit', () => {
    try {
      dest.flushSync();
    } catch {
      // Not yet open, or stdout already gone: nothing more can be written.
    }
  });
  return dest;
}
