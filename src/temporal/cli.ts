import { execFile } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const GO_PACKAGE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;
/**
 * The flags of the upstream release build (.goreleaser.yml in the CLI's module): strip symbols, and stamp the
 * version, which a plain `go install` leaves at "0.0.0-DEV" (`temporal --version`, the dev server's banner).
 */
const GO_LDFLAGS = `-s -w -X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION.replace(/^v/, '')}`;
const GO_INSTALL_ARGS = ['install', `-ldflags=${GO_LDFLAGS}`, GO_PACKAGE];
const run = promisify(execFile);

/** Built once per machine and user, so every clone and CI run after the first finds it at once. */
export function cacheRoot(): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'ai-gateway');
}

export function cachedCliPath(): string {
  return path.join(cacheRoot(), `temporal-cli-${TEMPORAL_CLI_VERSION}`, 'temporal');
}

/**
 * Written next to the binary after it is in place: the `go install` arguments it was built with. A binary
 * without it, or built with other arguments (say, before the version was stamped), is built again.
 */
function recipePath(): string {
  return path.join(path.dirname(cachedCliPath()), 'built-with');
}

function recipe(): string {
  return `go ${GO_INSTALL_ARGS.join(' ')}\n`;
}

function cachedAndCurrent(): boolean {
  try {
    return existsSync(cachedCliPath()) && readFileSync(recipePath(), 'utf8') === recipe();
  } catch {
    return false;
  }
}

async function onPath(name: string): Promise<string | null> {
  try {
    // The environment as this code sees it (not only as the process started), so callers may adjust PATH.
    const { stdout } = await run('sh', ['-c', `command -v ${name}`], { env: process.env });
    return stdout.trim() || null;
  } catch {
    return null;
  }
}

/**
 * Finds the Temporal CLI: TEMPORAL_CLI_PATH, then `temporal` on PATH, then the per-user cache, else
 * builds the pinned version with `go install` into that cache. Returns null when there is no Go, or the
 * build fails (say, no module proxy): callers then fall back to the SDK's own dev-server download.
 * A `temporal` already on PATH is used as it is, whatever its version.
 *
 * Several processes may get here at once (two checkouts started together, `npm start` beside `npm test`):
 * one builds, under a lock file in the cache, and the others wait for it and then use its binary.
 */
export async function ensureTemporalCli(
  log: (line: string) => void = () => undefined,
  opts: { lockPollMs?: number; lockWaitMs?: number } = {},
): Promise<string | null> {
  const explicit = process.env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!existsSync(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} does not exist`);
    return explicit;
  }
  const fromPath = await onPath('temporal');
  if (fromPath) return fromPath;
  const cached = cachedCliPath();
  if (cachedAndCurrent()) return cached;
  const go = await onPath('go');
  if (!go) return null;

  const lock = await acquireBuildLock(log, opts.lockPollMs ?? 500, opts.lockWaitMs ?? 30 * 60_000);
  if (!lock) return null;
  try {
    // Whoever held the lock before may have built it while this process waited.
    if (cachedAndCurrent()) return cached;
    return await build(go, log);
  } finally {
    lock.release();
  }
}

/** Builds into a fresh directory beside the cache and renames the binary into place, so no reader ever sees half a file. */
async function build(go: string, log: (line: string) => void): Promise<string | null> {
  const cached = cachedCliPath();
  const dir = path.dirname(cached);
  log(`Building the Temporal CLI ${TEMPORAL_CLI_VERSION} with go install (first run only, a few minutes)...`);
  mkdirSync(dir, { recursive: true });
  const gobin = mkdtempSync(`${dir}.tmp-`);
  try {
    await run(go, GO_INSTALL_ARGS, {
      env: { ...process.env, GOBIN: gobin },
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    rmSync(gobin, { recursive: true, force: true });
    const detail = String((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n').slice(-3).join(' | ');
    log(`go install ${GO_PACKAGE} failed (${detail}); falling back to the Temporal SDK's dev-server download`);
    return null;
  }
  const built = path.join(gobin, 'temporal');
  if (!existsSync(built)) {
    rmSync(gobin, { recursive: true, force: true });
    throw new Error(`go install ${GO_PACKAGE} finished but ${built} is missing`);
  }
  renameSync(built, cached);
  writeFileSync(path.join(gobin, 'built-with'), recipe());
  renameSync(path.join(gobin, 'built-with'), recipePath());
  rmSync(gobin, { recursive: true, force: true });
  log(`Temporal CLI ready at ${cached}`);
  return cached;
}

function buildLockPath(): string {
  return `${path.dirname(cachedCliPath())}.lock`;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The lock is a file holding "pid host", created with its content in one step (takeLock). A lock whose process
 * is gone (killed mid-build, say) is taken over; so is one from another host (a shared home directory) once it is
 * older than the wait. The rename in build() keeps the cache right even if two builds did run, so the lock only has
 * to make that rare, never impossible.
 */
async function acquireBuildLock(
  log: (line: string) => void,
  pollMs: number,
  waitMs: number,
): Promise<{ release(): void } | null> {
  const file = buildLockPath();
  mkdirSync(path.dirname(file), { recursive: true });
  const me = `${process.pid} ${os.hostname()}\n`;
  const started = Date.now();
  let said = false;
  for (;;) {
    try {
      takeLock(file, me);
      removeLeftoverBuilds();
      return {
        release: () => {
          try {
            if (readFileSync(file, 'utf8') === me) unlinkSync(file);
          } catch {
            // Already gone.
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = '';
    let age = 0;
    try {
      holder = readFileSync(file, 'utf8');
      age = Date.now() - statSync(file).mtimeMs;
    } catch {
      continue; // Released between our open and read: try again at once.
    }
    const [pidText, host] = holder.trim().split(' ');
    const pid = Number(pidText);
    const stale = host === os.hostname() ? !(pid > 0 && pidAlive(pid)) : age > waitMs;
    if (stale) {
      try {
        // Only if it is still the lock we judged stale.
        if (readFileSync(file, 'utf8') === holder) unlinkSync(file);
      } catch {
        // Someone else cleared it.
      }
      log(`Took over a stale Temporal CLI build lock (${holder.trim()}, no longer running)`);
      continue;
    }
    if (Date.now() - started > waitMs) {
      log(`Gave up waiting for the Temporal CLI build of process ${holder.trim()} (lock ${file}); falling back to the Temporal SDK's dev-server download`);
      return null;
    }
    if (!said) {
      log(`Another process (${holder.trim()}) is building the Temporal CLI; waiting for it...`);
      said = true;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/**
 * Creates the lock file with its content in one step: written to a file of this process's own, then hard-linked
 * to the lock's name, which fails with EEXIST when the lock is held. Another process never reads a lock that
 * exists but is still empty.
 */
function takeLock(file: string, content: string): void {
  const own = `${file}.${process.pid}`;
  writeFileSync(own, content, { mode: 0o644 });
  try {
    linkSync(own, file);
  } finally {
    rmSync(own, { force: true });
  }
}

/** Temporary build directories of builds that were killed; only called while holding the lock. */
function removeLeftoverBuilds(): void {
  const dir = path.dirname(cachedCliPath());
  const prefix = `${path.basename(dir)}.tmp-`;
  for (const name of readdirSync(path.dirname(dir))) {
    if (name.startsWith(prefix)) rmSync(path.join(path.dirname(dir), name), { recursive: true, force: true });
  }
}
