/**
 * `npm run test:unit`: the unit tests alone (test/unit), with no PostgreSQL, no Temporal and no global set-up, so
 * they run anywhere in well under a minute. `npm test` runs them again inside its `postgres` project.
 */
const { projects } = require('./jest.config.js');

const { displayName: _name, testMatch: _match, testPathIgnorePatterns: _ignore, ...base } = projects[0];

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  displayName: 'unit',
  testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
  maxWorkers: 2,
};
