import { jsonShapeProblem } from '../../src/api/plugins/json-shape';

const limits = { maxDepth: 4, maxArrayLength: 3 };

describe('jsonShapeProblem: bounds on a JSON text before it is parsed', () => {
  it.each([
    ['{}'],
    ['[1,2,3]'],
    ['[[[1]]]'],
    ['{"a":[{"b":[1,2,3]}]}'],
    ['[" [[[[[[ ", "a,b,c,d,e", "\\"[[[[["]'],
    ['[{"a":1,"b":2,"c":3,"d":4}]'],
    ['[]'],
    ['"[[[[[[[[[["'],
  ])('accepts %s', (text) => {
    expect(jsonShapeProblem(text, limits)).toBeUndefined();
  });

  it.each([
    ['[1,2,3,4]', 'array'],
    ['[[],[],[],[]]', 'array'],
    ['{"m":["a","b","c","d"]}', 'array'],
    ['[[[[[1]]]]]', 'depth'],
    ['{"a":{"b":{"c":{"d":{}}}}}', 'depth'],
  ])('refuses %s (%s)', (text, kind) => {
    expect(jsonShapeProblem(text, limits)?.kind).toBe(kind);
  });

  it('stops at the limit, not at the end of the text', () => {
    const huge = `[${'0,'.repeat(5_000_000)}0]`;
    const started = process.hrtime.bigint();
    expect(jsonShapeProblem(huge, { maxDepth: 64, maxArrayLength: 10_000 })).toEqual({ kind: 'array', limit: 10_000 });
    // Only the first ~20 KB were read; a full scan of 10 MB would take far longer than this bound allows.
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000);
    expect(jsonShapeProblem(`${'['.repeat(100_000)}${']'.repeat(100_000)}`, { maxDepth: 64, maxArrayLength: 10_000 })).toEqual({ kind: 'depth', limit: 64 });
  });
});
