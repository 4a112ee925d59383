import { createHash } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, statSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JournalEntry, SettleJournal } from '../domain/billing/settle-journal';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../private-files';
import { repeatInBackground } from '../repeat-in-background';
import { processAlive } from './data-dir';

/**
 * The settle journal as files (docs/decisions/0062-settle-journal.md). Each process appends its lease settles, one
 * JSON line each, to segment files of its own in BILLING_JOURNAL_DIR: `settles-s<scope>-<pid>-<start>-<n>.jsonl`,
 * where <scope> names the host and PID namespace the pid belongs to (containers sharing a folder each have their
 * own) and <start> is the process's start time (so a pid used again after a restart is not mistaken for the old
 * process).
 * Each segment starts with a line naming the database its settles are for: a folder shared by gateways of two
 * databases (a misconfiguration) never bills one's calls into the other. A line is written with one write(2) before
 * the answer leaves: once that returns it is in the kernel's page cache, which outlives the process (not the
 * machine: the same bound as the group commit's asynchronous commit). A segment is closed after `segmentLines`
 * lines and deleted once every line of it has been answered by PostgreSQL.
 *
 * Recovery: a process replays the segments of processes that are gone, first renaming each into its own name (a
 * rename is atomic, so two processes never replay one file), then deleting it once PostgreSQL has answered every
 * line. A process that dies while replaying leaves the renamed file to the next. Whether an owner is gone is known
 * at once when its pid can be asked about (the same scope). Another scope's pids cannot be: every process touches
 * the files it holds every `heartbeatMs`, and another scope's file counts as its owner's only while it was touched
 * within `staleMs`.
 */

interface Segment {
  readonly journal: FileSettleJournal;
  readonly file: string;
  fd: number | null;
  lines: number;
  /** Lines not yet answered by PostgreSQL. */
  pending: number;
}

/** The scope (absent in files of earlier versions, which mean this scope), pid, start, `r` for a taken-over file, n. */
const SEGMENT = /^settles-(?:s([0-9a-f]+)-)?(\d+)-(\d+)-(r?)(\d+)\.jsonl$/;

/**
 * Where this process's pid means this process: the host and its PID namespace, hashed short. Two containers on one
 * host have different namespaces (and usually host names); two hosts sharing a folder have different host names.
 */
function pidScope(): string {
  let namespace = '';
  try {
    namespace = readlinkSync('/proc/self/ns/pid');
  } catch {
    // No /proc: one namespace per host.
  }
  return createHash('sha256').update(`${os.hostname()}\0${namespace}`).digest('hex').slice(0, 12);
}

/** Segment numbers are the process's, not a journal's: two journals of one process (tests) may share a folder. */
let segments = 0;

/** This process's start time in clock ticks since boot (Linux), or 0 where /proc is not there. */
function startTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses): the start time is the 20th of them.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]) || 0;
  } catch {
    return 0;
  }
}

/**
 * The database a segment's first line names: null when it names none (nothing was journaled after it), undefined
 * when the line is not JSON (not a journal's: the file is left alone).
 */
function databaseOf(firstLine: string): unknown {
  try {
    return (JSON.parse(firstLine) as { database?: unknown }).database ?? null;
  } catch {
    return undefined;
  }
}

function ownerAlive(pid: number, start: number): boolean {
  if (!processAlive(pid)) return false;
  // Another process may have this pid now; 0: no /proc to tell, so it counts as the same one.
  const now = startTicks(pid);
  return start === 0 || now === 0 || now === start;
}

export class FileSettleJournal implements SettleJournal {
  private current: Segment | null = null;
  private closed = false;
  private reportedAt = 0;
  private readonly scope = pidScope();
  private readonly owner: string;
  /** The files this process holds (its segments, the ones it took over): touched every `heartbeatMs`. */
  private readonly held = new Set<string>();
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    readonly dir: string,
    private readonly opts: {
      /** The database the settles are for (no credentials): segments written for another one are never replayed here. */
      database: string;
      segmentLines?: number;
      /** How often this process touches the files it holds (default 10 s). */
      heartbeatMs?: number;
      /** How long another scope's file may go untouched before its owner counts as gone (default 60 s). */
      staleMs?: number;
      onError?: (err: unknown, what: string) => void;
    },
  ) {
    // The folder is made with the first segment: a process that bills nothing writes nothing under DATA_DIR.
    this.owner = `s${this.scope}-${process.pid}-${startTicks(process.pid)}`;
  }

  append(operation: string): JournalEntry | null {
    if (this.closed) return null;
    try {
      const seg = this.current ?? this.open();
      // Written as a string: Node encodes it on the way into write(2), with no Buffer made for it here.
      const line = `${operation}\n`;
      if (writeSync(seg.fd!, line) !== Buffer.byteLength(line)) {
        // A short write (a disk filling up) leaves a cut line, skipped at replay: the next line starts a new file.
        this.seal(seg);
        throw new Error('the settle journal took only part of a line');
      }
      seg.lines++;
      seg.pending++;
      if (seg.lines >= (this.opts.segmentLines ?? 10_000)) this.seal(seg);
      return seg;
    } catch (err) {
      // Once a minute at most: a full disk fails every call, and each of them waits for its commit instead.
      if (Date.now() - this.reportedAt > 60_000) {
        this.reportedAt = Date.now();
        this.opts.onError?.(err, 'writing the settle journal (answers wait for their commits meanwhile)');
      }
      return null;
    }
  }

  done(entry: JournalEntry): void {
    const seg = entry as Segment;
    seg.pending--;
    if (seg.pending === 0 && seg.fd === null) this.remove(seg.file);
  }

  /** After the last settle: the open segment is closed, and deleted when every line of it was answered. */
  close(): void {
    this.closed = true;
    if (this.current) this.seal(this.current);
    // The process is stopping: what it still holds is answered within seconds, well inside another scope's staleMs.
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /**
   * Replays the segments of processes that are gone (and those this process took over and could not finish) with
   * `submit`, which sends one operation to PostgreSQL. Returns how many operations were replayed. A segment that
   * fails is reported (onError) and left for the next call; the others go on.
   */
  async recover(submit: (operation: string) => Promise<{ o_status: string }>): Promise<number> {
    let replayed = 0;
    let names: string[];
    try {
      names = readdirSync(this.dir).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    for (const name of names) {
      const m = SEGMENT.exec(name);
      if (!m) continue;
      // This process's own names are `settles-<owner>-<n>` (open) and `settles-<owner>-r<n>` (taken over).
      const own = name.startsWith(`settles-${this.owner}-`);
      const file = path.join(this.dir, name);
      if (own ? m[4] !== 'r' : !this.ownerGone(m[1], Number(m[2]), Number(m[3]), file)) continue;
      try {
        replayed += await this.replay(name, file, own, submit);
      } catch (err) {
        // One segment that cannot be replayed now (PostgreSQL down, a line it refuses) never holds up the others.
        this.opts.onError?.(err, `replaying ${name} (kept for the next pass)`);
      }
    }
    return replayed;
  }

  /** Whether the process that wrote a segment is gone: asked by pid in this scope, else by the file's heartbeat. */
  private ownerGone(scope: string | undefined, pid: number, start: number, file: string): boolean {
    if (scope === undefined || scope === this.scope) return !ownerAlive(pid, start);
    try {
      return Date.now() - statSync(file).mtimeMs > (this.opts.staleMs ?? 60_000);
    } catch {
      return false; // taken by another process meanwhile
    }
  }

  /** Replays one gone owner's segment (or this process's own taken-over one); returns how many settles it sent. */
  private async replay(name: string, segmentFile: string, own: boolean, submit: (operation: string) => Promise<{ o_status: string }>): Promise<number> {
    let file = segmentFile;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return 0; // taken by another process meanwhile
    }
    // Read before the rename below: the owner is gone, so the file no longer changes, and a rename that succeeds
    // moves this very file (one another process took first fails).
    const head = text.indexOf('\n');
    const database = head < 0 ? null : databaseOf(text.slice(0, head));
    if (database === null) {
      // Its process died before it wrote the first line: no settle in it.
      this.remove(file);
      return 0;
    }
    if (database !== this.opts.database) return 0;
    if (!own) {
      const claimed = path.join(this.dir, `settles-${this.owner}-r${++segments}.jsonl`);
      try {
        renameSync(file, claimed);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0; // another process took it
        throw err;
      }
      file = claimed;
      this.hold(file);
    }
    const ops: string[] = [];
    for (const line of text.slice(head + 1).split('\n')) {
      if (!line) continue;
      // A line cut short by the process dying mid-write was never followed by its answer: nothing to bill. Only
      // settles are ever replayed, whatever else a file might hold.
      let op: { op?: unknown } | null = null;
      try {
        op = JSON.parse(line) as { op?: unknown };
      } catch {
        // reported below
      }
      if (op?.op === 'settle_lease') ops.push(line);
      else this.opts.onError?.(new Error(`a line of ${name} that is not a settle`), 'replaying the settle journal');
    }
    const answers = await Promise.all(ops.map((op) => submit(op)));
    // Anything but billed (now or before) billed nothing: the file stays for the next pass.
    const unbilled = answers.find((a) => a.o_status !== 'settled' && a.o_status !== 'duplicate');
    if (unbilled) throw new Error(`a replayed settle was answered '${unbilled.o_status}'`);
    this.remove(file);
    return ops.length;
  }

  private open(): Segment {
    makePrivateDir(this.dir);
    const file = path.join(this.dir, `settles-${this.owner}-${++segments}.jsonl`);
    const fd = openSync(file, 'a', PRIVATE_FILE_MODE);
    // The first line names the database; a segment without it whole would be dropped or skipped at replay, so one
    // that cannot take it is never used.
    const head = `${JSON.stringify({ journal: 1, database: this.opts.database })}\n`;
    try {
      if (writeSync(fd, head) !== Buffer.byteLength(head)) throw new Error('the settle journal took only part of a first line');
    } catch (err) {
      closeSync(fd);
      this.remove(file);
      throw err;
    }
    const seg: Segment = { journal: this, file, fd, lines: 0, pending: 0 };
    this.current = seg;
    this.hold(file);
    return seg;
  }

  /**
   * A file this process holds from now on: touched at once (a file taken over kept its old time through the rename,
   * which made it look gone to another scope), then with the rest until it is removed.
   */
  private hold(file: string): void {
    this.held.add(file);
    this.touch(file);
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => {
      for (const f of this.held) this.touch(f);
    }, this.opts.heartbeatMs ?? 10_000);
    this.heartbeat.unref();
  }

  private touch(file: string): void {
    const now = new Date();
    try {
      utimesSync(file, now, now);
    } catch (err) {
      // Removed or taken meanwhile; any other failure (a network disk's hiccup) is tried again next time.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') this.held.delete(file);
    }
  }

  private seal(seg: Segment): void {
    if (seg.fd !== null) closeSync(seg.fd);
    seg.fd = null;
    if (this.current === seg) this.current = null;
    if (seg.pending === 0) this.remove(seg.file);
  }

  private remove(file: string): void {
    this.held.delete(file);
    try {
      unlinkSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.opts.onError?.(err, 'removing a settle journal segment');
    }
  }
}

/**
 * Recovers at once, then every `intervalMs` (another process on this machine may die at any time), until stopped.
 * Errors are reported and retried on the next tick.
 */
export function startSettleJournalRecovery(
  journal: FileSettleJournal,
  submit: (operation: string) => Promise<{ o_status: string }>,
  opts: { intervalMs?: number; onError?: (err: unknown) => void; onReplayed?: (n: number) => void } = {},
): { first: Promise<void>; stop(): Promise<void> } {
  return repeatInBackground(() => journal.recover(submit), { intervalMs: opts.intervalMs ?? 30_000, now: true, onError: opts.onError, onDone: opts.onReplayed });
}

/**
 * Where a process journals its settles: BILLING_JOURNAL_DIR, or DATA_DIR/billing-journal (undefined for `off`), for
 * the database named without its credentials.
 */
export function settleJournalOf(
  journalDir: string | undefined,
  dataDir: string,
  database: { embedded: boolean; url: string },
): { dir: string; database: string } | undefined {
  if (journalDir === 'off') return undefined;
  const dir = path.resolve(journalDir ?? path.join(dataDir, 'billing-journal'));
  if (database.embedded) return { dir, database: 'embedded' };
  const url = new URL(database.url);
  return { dir, database: `${url.hostname}:${url.port || '5432'}${url.pathname}` };
}
