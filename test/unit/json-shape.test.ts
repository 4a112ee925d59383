import { jsonShapeProblem } from '../../src/domain/json-shape';

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

  it('answers with the first limit the text reaches, however much follows', () => {
    const wide = `[${'0,'.repeat(5_000_000)}0]`;
    expect(jsonShapeProblem(`[${wide},${'['.repeat(100)}${']'.repeat(100)}]`, { maxDepth: 64, maxArrayLength: 10_000 })).toEqual({ kind: 'array', limit: 10_000 });
    expect(jsonShapeProblem(`${'['.repeat(100_000)}${']'.repeat(100_000)}`, { maxDepth: 64, maxArrayLength: 10_000 })).toEqual({ kind: 'depth', limit: 64 });
  });
});
