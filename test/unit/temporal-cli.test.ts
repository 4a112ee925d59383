import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cachedCliPath, ensureTemporalCli } from '../../src/temporal/cli';

/** A directory holding executables named like real tools, each printing and exiting as told. */
function fakeBin(tools: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fake-bin-'));
  for (const [name, script] of Object.entries(tools)) {
    writeFileSync(path.join(dir, name), `#!/bin/sh\n${script}\n`);
    chmodSync(path.join(dir, name), 0o755);
  }
  return dir;
}

describe('finding the Temporal CLI', () => {
  const saved = { PATH: process.env.PATH, XDG_CACHE_HOME: process.env.XDG_CACHE_HOME, TEMPORAL_CLI_PATH: process.env.TEMPORAL_CLI_PATH };
  beforeEach(() => {
    delete process.env.TEMPORAL_CLI_PATH;
    process.env.XDG_CACHE_HOME = mkdtempSync(path.join(os.tmpdir(), 'empty-cache-'));
  });
  afterEach(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('uses TEMPORAL_CLI_PATH first, and says so when it is missing', async () => {
    const bin = fakeBin({ temporal: 'exit 0' });
    process.env.TEMPORAL_CLI_PATH = path.join(bin, 'temporal');
    await expect(ensureTemporalCli()).resolves.toBe(path.join(bin, 'temporal'));
    process.env.TEMPORAL_CLI_PATH = path.join(bin, 'nope');
    await expect(ensureTemporalCli()).rejects.toThrow(/TEMPORAL_CLI_PATH=.*nope does not exist/);
  });

  it('uses a temporal on PATH, then the per-user cache', async () => {
    const bin = fakeBin({ temporal: 'exit 0' });
    process.env.PATH = `${bin}:/usr/bin:/bin`;
    await expect(ensureTemporalCli()).resolves.toBe(path.join(bin, 'temporal'));

    process.env.PATH = '/usr/bin:/bin';
    mkdirSync(path.dirname(cachedCliPath()), { recursive: true });
    writeFileSync(cachedCliPath(), '');
    await expect(ensureTemporalCli()).resolves.toBe(cachedCliPath());
  });

  it('falls back to the SDK download (null) when go install fails, saying why', async () => {
    const bin = fakeBin({ go: 'echo "go: module lookup disabled by GOPROXY=off" >&2; exit 1' });
    process.env.PATH = `${bin}:/usr/bin:/bin`;
    const lines: string[] = [];
    await expect(ensureTemporalCli((l) => lines.push(l))).resolves.toBeNull();
    expect(lines.join('\n')).toMatch(/go install github.com\/temporalio\/cli\/cmd\/temporal@v1.5.1 failed \(go: module lookup disabled by GOPROXY=off\); falling back/);
  });

  it('builds the pinned version with go install into the cache when nothing is found', async () => {
    // The fake go records its arguments and GOBIN and "builds" the binary where go install would put it.
    const bin = fakeBin({ go: 'echo "$@" > "$GOBIN/args"; touch "$GOBIN/temporal"' });
    process.env.PATH = `${bin}:/usr/bin:/bin`;
    await expect(ensureTemporalCli()).resolves.toBe(cachedCliPath());
    const args = readFileSync(path.join(path.dirname(cachedCliPath()), 'args'), 'utf8').trim();
    expect(args).toBe('install github.com/temporalio/cli/cmd/temporal@v1.5.1');
  });

  it('returns null without Go, so the SDK download is used', async () => {
    process.env.PATH = fakeBin({});
    await expect(ensureTemporalCli()).resolves.toBeNull();
  });
});
