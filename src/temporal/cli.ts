import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const GO_PACKAGE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;
const run = promisify(execFile);

/** Built once per machine and user, so every clone and CI run after the first finds it at once. */
export function cacheRoot(): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'ai-gateway');
}

export function cachedCliPath(): string {
  return path.join(cacheRoot(), `temporal-cli-${TEMPORAL_CLI_VERSION}`, 'temporal');
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
 */
export async function ensureTemporalCli(log: (line: string) => void = () => undefined): Promise<string | null> {
  const explicit = process.env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!existsSync(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} does not exist`);
    return explicit;
  }
  const fromPath = await onPath('temporal');
  if (fromPath) return fromPath;
  const cached = cachedCliPath();
  if (existsSync(cached)) return cached;
  const go = await onPath('go');
  if (!go) return null;
  log(`Building the Temporal CLI ${TEMPORAL_CLI_VERSION} with go install (first run only, a few minutes)...`);
  mkdirSync(path.dirname(cached), { recursive: true });
  try {
    await run(go, ['install', GO_PACKAGE], {
      env: { ...process.env, GOBIN: path.dirname(cached) },
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    const detail = String((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n').slice(-3).join(' | ');
    log(`go install ${GO_PACKAGE} failed (${detail}); falling back to the Temporal SDK's dev-server download`);
    return null;
  }
  if (!existsSync(cached)) throw new Error(`go install ${GO_PACKAGE} finished but ${cached} is missing`);
  log(`Temporal CLI ready at ${cached}`);
  return cached;
}
