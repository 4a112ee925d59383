import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createScratchDatabase, type ScratchDatabase } from '../../src/db/scratch-database';

/**
 * A compiled gateway to benchmark: this checkout, or another commit of it built in a git worktree of its own, so
 * `npm run bench -- relay` can run two commits side by side on the same machine in the same run. Each build is
 * driven through its own compiled modules (dist/): its own migrations, its own account and key code, its own
 * bench/server.js, so an older commit runs as it was.
 */
export interface GatewayBuild {
  /** The short commit id (and `+changes` when the checkout has uncommitted ones). */
  label: string;
  /** The project root whose dist/ runs. */
  root: string;
}

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

function git(args: string[], cwd = PROJECT_ROOT): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** This checkout, as `npm run bench` built it. */
export function currentBuild(): GatewayBuild {
  let label = 'this checkout';
  try {
    label = git(['rev-parse', '--short=7', 'HEAD']);
    if (git(['status', '--porcelain', '--untracked-files=no'])) label += '+changes';
  } catch {
    // Not a git checkout (a copy of the tree): the label says so.
  }
  return { label, root: PROJECT_ROOT };
}

/**
 * Another commit, checked out in a git worktree under the system's temporary folder and compiled there with its own
 * scripts/build.mjs. It uses this checkout's node_modules (a symbolic link): the dependencies of the commits this
 * is meant for are a subset of today's. Kept between runs, keyed by the commit: a second run only starts it.
 */
export function commitBuild(rev: string, log: (line: string) => void): GatewayBuild {
  let commit: string;
  try {
    commit = git(['rev-parse', '--verify', `${rev}^{commit}`]);
  } catch {
    throw new Error(`commit ${rev} is not in this clone (a shallow one?): fetch it, or run the relay with --against=none`);
  }
  const label = commit.slice(0, 7);
  const dir = path.join(os.tmpdir(), `gateway-bench-build-${commit.slice(0, 12)}`);
  const stamp = path.join(dir, '.bench-built');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === commit && existsSync(path.join(dir, 'dist', 'bench', 'server.js'))) {
    return { label, root: dir };
  }
  log(`building ${label} (${rev}) in ${dir}`);
  try {
    git(['worktree', 'remove', '--force', dir]);
  } catch {
    rmSync(dir, { recursive: true, force: true });
  }
  git(['worktree', 'prune']);
  git(['worktree', 'add', '--force', '--detach', dir, commit]);
  symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  writeFileSync(stamp, commit);
  return { label, root: dir };
}

/** A fresh database migrated by `build`'s own code, with an account and keys made by it. */
export interface BuildDatabase {
  url: string;
  /** A finite key (a large remain_quota: every call reserves, settles and debits it), as `sk-...`. */
  newKey(name: string): Promise<{ key: string; accountId: number; tokenId: number }>;
  close(): Promise<void>;
}

export async function buildDatabase(build: GatewayBuild, serverUrl: string, secret: string): Promise<BuildDatabase> {
  const scratch: ScratchDatabase = await createScratchDatabase(serverUrl, 'bench_build');
  // The build's own compiled modules (CommonJS), loaded from its dist/.
  const load = createRequire(path.join(build.root, 'package.json'));
  const dist = (p: string) => load(path.join(build.root, 'dist', 'src', p));
  await dist('db/migrate.js').migrate(scratch.url);
  const db = dist('db/pool.js').createPool(scratch.url, 2);
  // Builds since the domain got its repositories (decision 0066) take them where older ones took the pool.
  const repos = existsSync(path.join(build.root, 'dist', 'src', 'db', 'repositories', 'index.js')) ? dist('db/repositories/index.js').createRepositories(db) : null;
  const tokens = dist('domain/keys/tokens.js').createTokenService({
    ...(repos ? { repos } : { db }),
    cipher: new (dist('domain/keys/key-material.js').KeyCipher)(secret),
    publishKeyChange: async () => undefined,
    afterKeyChange: async () => undefined,
  });
  const { createAccount } = dist('domain/accounts/accounts.js');
  let n = 0;
  return {
    url: scratch.url,
    async newKey(name) {
      const { account } = await createAccount(repos ?? db, { username: `bench_${process.pid}_${++n}_${Date.now()}`, password: 'bench-password' });
      const record = await tokens.create(account.id, { name, remain_quota: 1_000_000_000_000, unlimited_quota: false });
      return { key: `sk-${record.key}`, accountId: account.id, tokenId: record.id };
    },
    async close() {
      await db.end();
      await scratch.close();
    },
  };
}
