import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Builds the Go program in `dir` (a module of its own, its dependencies pinned by go.mod and go.sum, fetched from
 * the Go module proxy) once per content: the binary is kept in ~/.cache/ai-gateway under a hash of its sources,
 * so only the first run on a machine compiles it.
 */
export async function buildGoClient(dir: string): Promise<string> {
  const hash = createHash('sha256');
  for (const f of readdirSync(dir).filter((n) => /\.(go|mod|sum)$/.test(n)).sort()) hash.update(f).update(readFileSync(path.join(dir, f)));
  const cache = path.join(os.homedir(), '.cache', 'ai-gateway');
  const bin = path.join(cache, `${path.basename(dir)}-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(bin)) return bin;
  mkdirSync(cache, { recursive: true });
  try {
    await run('go', ['build', '-o', bin, '.'], { cwd: dir, timeout: 600_000, env: { ...process.env, GOFLAGS: '-mod=readonly' } });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('the Go toolchain (go) is needed to build the openai-go client test: install Go 1.26 or newer');
    throw new Error(`go build in ${dir} failed: ${e.stderr ?? e.message}`);
  }
  return bin;
}

/** Runs a built client with `env`; resolves with its one JSON line of output. */
export async function runGoClient(bin: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  try {
    const { stdout } = await run(bin, [], { env: { ...process.env, ...env }, timeout: 90_000 });
    return JSON.parse(stdout.trim().split('\n').at(-1)!);
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`the Go client failed: ${e.stdout ?? ''} ${e.stderr ?? ''} ${e.message}`);
  }
}
