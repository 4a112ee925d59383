import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
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

    // Built once (by a fake go), then found in the cache with no go at all.
    process.env.PATH = `${fakeBin({ go: 'touch "$GOBIN/temporal"' })}:/usr/bin:/bin`;
    await expect(ensureTemporalCli()).resolves.toBe(cachedCliPath());
    process.env.PATH = '/usr/bin:/bin';
    await expect(ensureTemporalCli()).resolves.toBe(cachedCliPath());
  });

  it('builds again over a cached binary that was built some other way (say, without the version stamp)', async () => {
    mkdirSync(path.dirname(cachedCliPath()), { recursive: true });
    writeFileSync(cachedCliPath(), 'old');
    const record = path.join(process.env.XDG_CACHE_HOME!, 'go-runs');
    process.env.PATH = `${fakeBin({ go: `echo run >> ${record}; echo new > "$GOBIN/temporal"` })}:/usr/bin:/bin`;
    await expect(ensureTemporalCli()).resolves.toBe(cachedCliPath());
    expect(readFileSync(cachedCliPath(), 'utf8')).toBe('new\n');
    await expect(ensureTemporalCli()).resolves.toBe(cachedCliPath());
    expect(readFileSync(record, 'utf8')).toBe('run\n');
  });

  it('falls back to the SDK download (null) when go install fails, saying why', async () => {
    const bin = fakeBin({ go: 'echo "go: module lookup disabled by GOPROXY=off" >&2; exit 1' });
    process.env.PATH = `${bin}:/usr/bin:/bin`;
    const lines: string[] = [];
    await expect(ensureTemporalCli((l) => lines.push(l))).resolves.toBeNull();
    expect(lines.join('\n')).toMatch(/go install github.com\/temporalio\/cli\/cmd\/temporal@v1.5.1 failed \(go: module lookup disabled by GOPROXY=off\); falling back/);
  });

  it('builds the pinned version with go install, version stamped, into the cache when nothing is found', async () => {
    // The fake go records its arguments and "builds" the binary where go install would put it (GOBIN).
    const record = path.join(process.env.XDG_CACHE_HOME!, 'go-args');
    const bin = fakeBin({ go: `echo "$@" > ${record}; touch "$GOBIN/temporal"` });
    process.env.PATH = `${bin}:/usr/bin:/bin`;
    await expect(ensureTemporalCli()).resolves.toBe(cachedCliPath());
    expect(readFileSync(record, 'utf8').trim()).toBe(
      'install -ldflags=-s -w -X github.com/temporalio/cli/temporalcli.Version=1.5.1 github.com/temporalio/cli/cmd/temporal@v1.5.1',
    );
    // It built into a temporary directory and renamed the binary into place; nothing is left beside it.
    expect(readdirSync(path.dirname(path.dirname(cachedCliPath()))).sort()).toEqual(['temporal-cli-v1.5.1']);
  });

  it('builds once when several callers ask at once; the others wait and use that binary', async () => {
    const record = path.join(process.env.XDG_CACHE_HOME!, 'go-runs');
    // A slow build, so the other callers arrive while it runs.
    const bin = fakeBin({ go: `echo run >> ${record}; sleep 1; echo built > "$GOBIN/temporal"` });
    process.env.PATH = `${bin}:/usr/bin:/bin`;
    const lines: string[] = [];
    const results = await Promise.all(
      [1, 2, 3].map(() => ensureTemporalCli((l) => lines.push(l), { lockPollMs: 50 })),
    );
    expect(results).toEqual([cachedCliPath(), cachedCliPath(), cachedCliPath()]);
    expect(readFileSync(record, 'utf8')).toBe('run\n');
    expect(lines.filter((l) => l.startsWith('Another process')).length).toBe(2);
    expect(existsSync(`${path.dirname(cachedCliPath())}.lock`)).toBe(false);
  });

  it('builds once across processes too (two setup runs started together)', () => {
    const record = path.join(process.env.XDG_CACHE_HOME!, 'go-runs');
    const bin = fakeBin({ go: `echo run >> ${record}; sleep 1; echo built > "$GOBIN/temporal"` });
    const tsx = path.join(__dirname, '../../node_modules/.bin/tsx');
    const setup = path.join(__dirname, '../../src/temporal/setup.ts');
    const env = { ...process.env, PATH: `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin` };
    // Both started before either finishes: a shell runs them in the background and waits for both.
    const out = spawnSync('sh', ['-c', `"${tsx}" "${setup}" & "${tsx}" "${setup}" & wait`], { env, encoding: 'utf8' });
    expect(out.status).toBe(0);
    expect(readFileSync(record, 'utf8')).toBe('run\n');
    expect(out.stdout).toMatch(/Another process \(\d+ .*\) is building the Temporal CLI; waiting for it/);
    expect(readFileSync(cachedCliPath(), 'utf8')).toBe('built\n');
  });

  it('takes over the lock of a build whose process is gone', async () => {
    const dead = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' }).stdout.trim();
    mkdirSync(path.dirname(cachedCliPath()), { recursive: true });
    writeFileSync(`${path.dirname(cachedCliPath())}.lock`, `${dead} ${os.hostname()}\n`);
    // And its half-finished build directory, which is cleared.
    mkdirSync(`${path.dirname(cachedCliPath())}.tmp-killed`);
    process.env.PATH = `${fakeBin({ go: 'touch "$GOBIN/temporal"' })}:/usr/bin:/bin`;
    const lines: string[] = [];
    await expect(ensureTemporalCli((l) => lines.push(l), { lockPollMs: 50 })).resolves.toBe(cachedCliPath());
    expect(lines.join('\n')).toMatch(new RegExp(`Took over a stale Temporal CLI build lock \\(${dead} `));
    expect(existsSync(`${path.dirname(cachedCliPath())}.tmp-killed`)).toBe(false);
  });

  it('returns null without Go, so the SDK download is used', async () => {
    process.env.PATH = fakeBin({});
    await expect(ensureTemporalCli()).resolves.toBeNull();
  });
});
