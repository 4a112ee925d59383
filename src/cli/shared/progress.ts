import { SingleBar } from 'cli-progress';
import { sleep } from './gateway-api';

/** One reading of a long-running job (a key batch, a video task). */
export interface Progress {
  value: number;
  total: number;
  /** Short words before the bar: `issuing`, `grace`... */
  phase: string;
  /** After the counts: `(12 changed)`. */
  extra: string;
  /** The job's status word, for the plain-text lines. */
  status: string;
  /** True once the job has ended (the follower returns then). */
  done: boolean;
}

export interface FollowOptions<T> {
  /** `batch 42`: starts every line. */
  label: string;
  /** Reads the job once. */
  poll: () => Promise<T>;
  progress: (job: T) => Progress;
  /** Printed on Ctrl-C, which stops following (exit 130) but not the job: how to follow it again. */
  resumeHint: string;
  pollMs?: number;
}

/**
 * Shows a job's progress on stderr until it ends, and returns its last reading: a bar on a terminal, a line
 * when something changed (at most every 2 s, and at the end) otherwise.
 */
export async function followProgress<T>(opts: FollowOptions<T>): Promise<T> {
  const pollMs = opts.pollMs ?? 500;
  const tty = Boolean(process.stderr.isTTY);
  const bar = new SingleBar({
    stream: process.stderr,
    format: `${opts.label} {phase} [{bar}] {value}/{total} {extra}`,
    hideCursor: true,
    clearOnComplete: false,
    noTTYOutput: false,
  });
  let started = false;
  let lastLine = 0;
  let lastText = '';
  const stopOnInterrupt = () => {
    if (started) bar.stop();
    process.stderr.write(`\n${opts.resumeHint}\n`);
    process.exit(130);
  };
  process.once('SIGINT', stopOnInterrupt);
  try {
    for (;;) {
      const job = await opts.poll();
      const { value, total, phase, extra, status, done } = opts.progress(job);
      if (tty) {
        if (!started) {
          bar.start(total, value, { phase, extra });
          started = true;
        } else {
          bar.setTotal(total);
          bar.update(value, { phase, extra });
        }
      } else {
        const text = `${opts.label}: ${status} ${phase} ${value}/${total} ${extra}`.trim();
        if (text !== lastText && (Date.now() - lastLine > 2000 || done)) {
          process.stderr.write(`${text}\n`);
          lastLine = Date.now();
          lastText = text;
        }
      }
      if (done) return job;
      await sleep(pollMs);
    }
  } finally {
    if (started) bar.stop();
    process.removeListener('SIGINT', stopOnInterrupt);
  }
}
