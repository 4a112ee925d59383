import { chmodSync, lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { exitWithin, openEntries, removeTempDataDirs, runGateway, tempDataDir } from './runtime-process';

/** Opens up every entry under `root` the way an older install (or a umask of 000) left it: dirs 0777, files 0666. */
function widen(root: string): number {
  let n = 0;
  const visit = (p: string) => {
    const st = lstatSync(p);
    chmodSync(p, st.isDirectory() ? 0o777 : 0o666);
    n++;
    if (st.isDirectory()) for (const name of readdirSync(p)) visit(path.join(p, name));
  };
  visit(root);
  return n;
}

// A umask of 000 is the most permissive a user can have: whatever the gateway gets right under it, it gets right
// under any other.
const UMASK = 0o000;

describe('DATA_DIR is private to the user (dirs 0700, files 0600), whatever the umask', () => {
  afterAll(removeTempDataDirs);

  it('gateway start: a fresh DATA_DIR has no group- or world-accessible entry while running and after stop', async () => {
    // A path that does not exist yet, so the gateway creates DATA_DIR itself.
    const dataDir = path.join(tempDataDir(), 'data');
    const p = runGateway(['start'], { DATA_DIR: dataDir, PORT: '0' }, { umask: UMASK });
    await p.waitFor(/Press Ctrl-C/, 60_000);
    const running = openEntries(dataDir);
    p.child.kill('SIGTERM');
    expect(await exitWithin(p, 20_000)).toEqual({ code: 0, signal: null });
    // The listing must cover what a start writes: PGlite's files, the dev server's SQLite file, the secret.
    const names = readdirSync(dataDir);
    expect(names).toEqual(expect.arrayContaining(['pg', 'temporal.sqlite', 'gateway-secret']));
    expect(running).toEqual([]);
    expect(openEntries(dataDir)).toEqual([]);
  }, 90_000);

  it('gateway start: tightens a DATA_DIR an older install left open, and keeps it tight across a restart', async () => {
    const dataDir = path.join(tempDataDir(), 'data');
    const first = runGateway(['start'], { DATA_DIR: dataDir, PORT: '0' }, { umask: UMASK });
    await first.waitFor(/Press Ctrl-C/, 60_000);
    first.child.kill('SIGTERM');
    expect(await exitWithin(first, 20_000)).toEqual({ code: 0, signal: null });

    expect(widen(dataDir)).toBeGreaterThan(100);
    expect(openEntries(dataDir).length).toBeGreaterThan(100);

    const second = runGateway(['start'], { DATA_DIR: dataDir, PORT: '0' }, { umask: UMASK });
    await second.waitFor(/Press Ctrl-C/, 60_000);
    const running = openEntries(dataDir);
    second.child.kill('SIGTERM');
    expect(await exitWithin(second, 20_000)).toEqual({ code: 0, signal: null });
    expect(running).toEqual([]);
    expect(openEntries(dataDir)).toEqual([]);
  }, 120_000);

  it('gateway migrate on a fresh embedded DATA_DIR leaves it private too', async () => {
    const dataDir = path.join(tempDataDir(), 'data');
    const p = runGateway(['migrate'], { DATA_DIR: dataDir }, { umask: UMASK });
    expect(await exitWithin(p, 60_000)).toEqual({ code: 0, signal: null });
    expect(p.output()).toContain('Applied:');
    expect(openEntries(dataDir)).toEqual([]);
  }, 90_000);
});
