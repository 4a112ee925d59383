/**
 * Two projects over one global set-up (one Temporal dev server, one PostgreSQL database):
 * - `postgres`: every test, the gateway on a real PostgreSQL (as operators deploy it);
 * - `embedded`: the api-level integration tests again, each gateway on its own embedded PGlite through the
 *   same single-session pool `npm start` uses (what newcomers meet first). A test file's first line says which
 *   (`// test modes: postgres, embedded`). Tests that need several processes
 *   on one database (replicas, chaos, CLI processes) are PostgreSQL-only by nature; `npm start` itself is
 *   tested end to end by the runtime-* tests, which run embedded.
 */
const fs = require('node:fs');
const path = require('node:path');

const base = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.(t|j|mj)s$': ['@swc/jest'] },
  // postgrator and glob ship as ES modules only; let swc turn them into CommonJS for jest.
  transformIgnorePatterns: ['/node_modules/(?!(postgrator|glob|minimatch|path-scurry|lru-cache|minipass|jackspeak|foreground-child|signal-exit|package-json-from-dist|balanced-match|brace-expansion)/)'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  // The agent CLIs' own package (test/agents) is not the tests' to crawl.
  modulePathIgnorePatterns: ['<rootDir>/test/agents/'],
  testTimeout: 60000,
};

/**
 * The modes a test file runs in, from its first line `// test modes: postgres, embedded`: the `postgres` project
 * alone when it has none. The api-level integration tests name both; a test of `npm start`'s newcomer path names
 * `embedded` alone (its PostgreSQL twin is coding-agents).
 */
function modesOf(file) {
  const first = fs.readFileSync(file, 'utf8').split('\n', 1)[0];
  const m = /^\/\/ test modes: ([a-z, ]+)$/.exec(first);
  return m ? m[1].split(',').map((s) => s.trim()) : ['postgres'];
}

function testFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : testFiles(full);
    return e.name.endsWith('.test.ts') ? [full] : [];
  });
}

const TEST_FILES = testFiles(path.join(__dirname, 'test')).map((file) => ({ file, modes: modesOf(file) }));
const inMode = (mode) => TEST_FILES.filter((t) => t.modes.includes(mode)).map((t) => t.file);
const exactPath = (file) => `^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
const notInMode = (mode) => TEST_FILES.filter((t) => !t.modes.includes(mode)).map((t) => t.file);

/** @type {import('jest').Config} */
module.exports = {
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
  maxWorkers: 2,
  testTimeout: 60000,
  projects: [
    // The newcomer's path (built-in simulator, `npm start`) runs embedded only; its PostgreSQL twin is coding-agents.
    { ...base, displayName: 'postgres', testMatch: ['**/*.test.ts'], testPathIgnorePatterns: ['/node_modules/', ...notInMode('postgres').map(exactPath)] },
    {
      ...base,
      displayName: 'embedded',
      testMatch: inMode('embedded'),
      setupFiles: ['<rootDir>/test/helpers/embedded-mode.ts'],
    },
  ],
};
