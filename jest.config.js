/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j|mj)s$': ['@swc/jest'] },
  // postgrator and glob ship as ES modules only; let swc turn them into CommonJS for jest.
  transformIgnorePatterns: ['/node_modules/(?!(postgrator|glob|minimatch|path-scurry|lru-cache|minipass|jackspeak|foreground-child|signal-exit|package-json-from-dist|balanced-match|brace-expansion)/)'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
};
