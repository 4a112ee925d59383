import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';

// Files holding secrets or data (DATA_DIR and everything in it) are for their owner only: directories 0700,
// files 0600, whatever the umask. See docs/decisions/0022-file-modes.md.

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * From now on, whatever this process and the children it starts create is closed to group and others
 * (umask |= 077): the Temporal dev server's SQLite files, PGlite's directories, lock and secret files.
 * Only narrows the umask, never widens it. A no-op in worker threads, which may not set the process umask.
 */
export function restrictUmask(): void {
  if (!isMainThread) return;
  const previous = process.umask(0o077);
  process.umask(previous | 0o077);
}

const ignorable = (err: unknown) => ['ENOENT', 'EPERM', 'EACCES'].includes((err as NodeJS.ErrnoException).code ?? '');

/**
 * Makes `p` owner-only (directory 0700, file 0600) if its group or others have any access. Symbolic links and
 * other special files are left alone. An entry that vanished meanwhile, or that belongs to someone else, is
 * skipped: a start must not fail over a mode. Returns whether the mode was changed.
 */
function tighten(p: string): { changed: boolean; dir: boolean } {
  let st;
  try {
    st = lstatSync(p);
  } catch (err) {
    if (ignorable(err)) return { changed: false, dir: false };
    throw err;
  }
  const dir = st.isDirectory();
  if ((!dir && !st.isFile()) || (st.mode & 0o077) === 0) return { changed: false, dir };
  try {
    chmodSync(p, dir ? PRIVATE_DIR_MODE : PRIVATE_FILE_MODE);
    return { changed: true, dir };
  } catch (err) {
    if (ignorable(err)) return { changed: false, dir };
    throw err;
  }
}

/** `tighten` on `root` and, for a directory, on everything below it. Returns how many modes it changed. */
export function tightenTree(root: string): number {
  let changed = 0;
  const visit = (p: string) => {
    const t = tighten(p);
    if (t.changed) changed++;
    if (!t.dir) return;
    let names: string[];
    try {
      names = readdirSync(p);
    } catch (err) {
      if (ignorable(err)) return;
      throw err;
    }
    for (const name of names) visit(path.join(p, name));
  };
  visit(root);
  return changed;
}

/**
 * `mkdir -p dir` with the directories it creates 0700; `dir` itself is made 0700 if it already existed open.
 * A directory with the sticky bit (such as /tmp) is shared by design and left as it is.
 */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const st = lstatSync(dir);
  if ((st.mode & 0o1000) === 0 && (st.mode & 0o077) !== 0) tighten(dir);
}
