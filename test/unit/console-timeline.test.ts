import { readFileSync } from 'node:fs';
import path from 'node:path';
import { timelineOf, type ExportedHistory } from '../../console/src/timeline';

/** The console's task timeline (issue 9 §1, Tasks), drawn from the committed histories of every family and end. */
describe('console timeline of a video task', () => {
  const load = (name: string) => JSON.parse(readFileSync(path.join(__dirname, '../histories', `${name}.json`), 'utf8')) as ExportedHistory;

  // Both workflow shapes: the upstream part in one activity, and the polling loop of the older histories.
  const shapes = ['', 'polling-'];

  it.each(shapes.flatMap((shape) => ['a', 'b', 'c'].map((family) => `${shape}${family}`)))('video-%s: completed polls with progress, settles once and completes', (name) => {
    const steps = timelineOf(load(`video-${name}-completed`));
    expect(steps.map((s) => s.title)).toContain('Sent upstream');
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
    for (const name of shapes.flatMap((shape) => ['a', 'b', 'c'].map((family) => `${shape}${family}`))) {
      const steps = timelineOf(load(`video-${name}-${end}`));
      expect(steps.filter((s) => s.kind === 'settle')).toEqual([]);
      expect(steps.filter((s) => s.kind === 'release').map((s) => s.title)).toEqual([expect.stringMatching(title)]);
      if (end === 'cancelled') expect(steps.map((s) => s.title)).toContain('Cancel requested');
    }
  });
});
