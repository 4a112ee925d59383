import { readFileSync } from 'node:fs';
import path from 'node:path';
import { timelineOf, type ExportedHistory } from '../../console/src/timeline';

/** The console's task timeline (issue 9 §1, Tasks), drawn from the committed histories of every family and end. */
describe('console timeline of a video task', () => {
  const load = (name: string) => JSON.parse(readFileSync(path.join(__dirname, '../histories', `${name}.json`), 'utf8')) as ExportedHistory;

  it.each(['a', 'b', 'c'])('family %s: completed polls with progress, settles once and completes', (family) => {
    const steps = timelineOf(load(`video-${family}-completed`));
    const kinds = steps.map((s) => s.kind);
    expect(kinds[0]).toBe('start');
    expect(kinds).toContain('upstream');
    expect(steps.filter((s) => s.kind === 'poll').at(-1)?.title).toBe('Poll: completed 100%');
    expect(kinds.filter((k) => k === 'settle')).toHaveLength(1);
    expect(kinds).not.toContain('release');
    expect(kinds.at(-1)).toBe('end');
    for (const s of steps) expect(Number.isNaN(Date.parse(s.at))).toBe(false);
  });

  it.each([
    ['failed', /^Released the hold: /],
    ['timeout', /^Released the hold: timeout$/],
    ['cancelled', /^Released the hold: cancelled$/],
  ])('every family, %s: releases the hold, bills nothing', (end, title) => {
    for (const family of ['a', 'b', 'c']) {
      const steps = timelineOf(load(`video-${family}-${end}`));
      expect(steps.filter((s) => s.kind === 'settle')).toEqual([]);
      expect(steps.filter((s) => s.kind === 'release').map((s) => s.title)).toEqual([expect.stringMatching(title)]);
      if (end === 'cancelled') expect(steps.map((s) => s.title)).toContain('Cancel requested');
    }
  });
});
