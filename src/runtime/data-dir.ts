import { randomBytes } from 'node:crypto';
import { chmodSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { makePrivateDir, restrictUmask, tightenTree } from '../private-files';
import type { Resources } from './resources';

/**
 * DATA_DIR holds everything the embedded defaults keep: `pg/` (PGlite), `temporal.sqlite` (the Temporal dev
 * server), `gateway-secret` and, while a process uses them, `gateway.pid`.
 */
export const dataPaths = (dataDir: string) => {
  const root = path.resolve(dataDir);
  return {
    root,
    postgres: path.join(root, 'pg'),
    temporal: path.join(root, 'temporal.sqlite'),
    secret: path.join(root, 'gateway-secret'),
    lock: path.join(root, 'gateway.pid'),
  };
};

/** What the gateway keeps in DATA_DIR (SQLite adds `-wal`, `-shm` or `-journal` next to its file). */
const isOurs = (name: string) => /^(gateway-secret|gateway\.pid|temporal\.sqlite(-wal|-shm|-journal)?)$/.test(name);

const secured = new Set<string>();

/**
 * Before anything is written to DATA_DIR: the process umask is narrowed to 077 (so PGlite's directories, the
 * Temporal dev server child's SQLite files and everything else created from now on is owner-only), DATA_DIR is
 * created 0700, and, once per process, what an older install left open in it is closed (dirs 0700, files 0600).
 * Only the gateway's own entries are walked, never anything else that lives in DATA_DIR.
 */
export function secureDataDir(dataDir: string): void {
  const { root } = dataPaths(dataDir);
  restrictUmask();
  makePrivateDir(root);
  if (secured.has(root)) return;
  secured.add(root);
  // pg/ is left to startEmbeddedPostgres, which tightens it once PGlite has opened it (and again at close).
  for (const name of readdirSync(root)) if (isOurs(name)) tightenTree(path.join(root, name));
}

/** Whether a process with this pid runs (a zombie does not count: it holds nothing). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A process killed a moment ago can still be listed until its parent (or init) reaps it: a zombie holds nothing.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX] /s.test(stat);
  } catch {
    return true;
  }
}

/** The owner of a lock, once it is gone or after `waitMs` (a gateway restarted right after a kill: it is exiting). */
function ownerStillAlive(pid: number, waitMs = 5_000): boolean {
  const until = Date.now() + waitMs;
  while (processAlive(pid)) {
    if (Date.now() >= until) return true;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  }
  return false;
}

const heldLocks = new Set<string>();

/**
 * PGlite and the dev server's SQLite file take one process at a time: a second process on the same DATA_DIR
 * would corrupt them. Records this process's pid in DATA_DIR/gateway.pid until `resources` are closed.
 * A pid file whose process is gone is taken over.
 */
export function lockDataDir(dataDir: string, resources: Resources): void {
  const { root, lock } = dataPaths(dataDir);
  if (heldLocks.has(lock)) return;
  secureDataDir(dataDir);
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
      const owner = Number(readFileSync(lock, 'utf8').trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && ownerStillAlive(owner)) {
        throw new Error(
          `${root} is in use by another gateway process (pid ${owner}). Stop it first, or give this one its own ` +
            `DATA_DIR. If no gateway is running, delete ${lock}.`,
        );
      }
      unlinkSync(lock);
    }
  }
  heldLocks.add(lock);
  resources.add('the DATA_DIR lock', () => {
    heldLocks.delete(lock);
    try {
      if (readFileSync(lock, 'utf8').trim() === String(process.pid)) unlinkSync(lock);
    } catch {
      // already gone
    }
  });
}

/**
 * The embedded-mode GATEWAY_SECRET: generated once into DATA_DIR/gateway-secret (mode 0600) and read back on
 * every later start, so keys encrypted before a restart still decrypt after it.
 */
export function loadOrCreateSecret(dataDir: string): { secret: string; created: boolean; file: string } {
  const { secret: file } = dataPaths(dataDir);
  secureDataDir(dataDir);
  try {
    writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
    // The umask may have narrowed the mode further; it must not have widened it.
    chmodSync(file, 0o600);
    return { secret: readFileSync(file, 'utf8').trim(), created: true, file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const secret = readFileSync(file, 'utf8').trim();
  if (secret.length < 32) throw new Error(`${file} holds a secret shorter than 32 characters; fix or remove it`);
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return { secret, created: false, file };
}
