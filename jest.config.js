/**
 * Two projects over one global set-up (one Temporal dev server, one PostgreSQL database):
 * - `postgres`: every test, the gateway on a real PostgreSQL (as operators deploy it);
 * - `embedded`: the api-level integration tests again, each gateway on its own embedded PGlite through the
 *   same single-session pool `npm start` uses (what newcomers meet first). Tests that need several processes
 *   on one database (replicas, chaos, CLI processes) are PostgreSQL-only by nature; `npm start` itself is
 *   tested end to end by the runtime-* tests, which run embedded.
 */
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

const EMBEDDED_TESTS = [
  'foundation',
  'hardening',
  'bounded-requests',
  'sign-in-security',
  'key-rate-limits',
  'embedded-session',
  'malformed-sweep',
  'management-accounts',
  'management-tokens',
  'management-validation',
  'openapi',
  'inference-models',
  'inference-openai-client',
  'inference-anthropic',
  'inference-builtin-config',
  'coding-agents-builtin',
  'quota-holds',
  'readiness-and-limits',
  'batch-issue',
  'batch-status',
  'batch-rotate',
  'batch-rotate-quota',
  'batch-idempotency',
  'batch-history',
  'relay-openai',
  'inference-batches',
  'relay-failover',
  'relay-validation',
  'relay-concurrency',
  'relay-billing-excess',
  'video-tasks',
  'video-openai-client',
  'video-audit',
  'video-webhooks',
  'relay-audit',
  'response-passthrough',
  'console-api',
  'metrics',
  'tracing',
  'provider-recordings',
  'sql-functions',
  'messages-forward-compat',
  'channel-headers',
  'responses-api',
  'audio-rerank-moderation',
  'responses-websocket',
  'gemini-api',
  'stream-faults',
  'route-fuzz',
  'cloud-azure',
  'cloud-vertex',
  'cloud-bedrock',
  'cloud-bedrock-converse',
];

/** @type {import('jest').Config} */
module.exports = {
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
  maxWorkers: 2,
  testTimeout: 60000,
  projects: [
    // The newcomer's path (built-in simulator, `npm start`) runs embedded only; its PostgreSQL twin is coding-agents.
    { ...base, displayName: 'postgres', testMatch: ['**/*.test.ts'], testPathIgnorePatterns: ['/node_modules/', '/coding-agents-builtin\\.test\\.ts$'] },
    {
      ...base,
      displayName: 'embedded',
      testMatch: EMBEDDED_TESTS.map((name) => `**/integration/${name}.test.ts`),
      setupFiles: ['<rootDir>/test/helpers/embedded-mode.ts'],
    },
  ],
};
