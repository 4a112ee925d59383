// The gateway's layers and what each may import: the one source of eslint.config.mjs's boundaries rules and of the
// import table in docs/architecture.md (test/unit/layer-rules.test.ts checks that the two say the same).

/**
 * `folder` is the path the layer holds (a folder, or a file at src/'s top), `mayImport` the other layers its files may
 * import (its own files always), `typesOnly` the layers it may import types from and nothing else, and `packages`
 * the packages it must not import (a glob each). `element: false` marks the one entry that is not a folder.
 */
export const LAYERS = [
  {
    type: 'api',
    folder: 'src/api',
    what: 'transport: the Fastify app, its plugins (auth, request id, limits, error families) and routes',
    mayImport: ['domain', 'schemas', 'gateway-config', 'observability', 'temporal', 'shared'],
    typesOnly: ['upstream'],
  },
  {
    type: 'schemas',
    folder: 'src/schemas',
    what: 'the wire contract: zod request schemas (the one source of request types) and each API family\'s error format',
    mayImport: ['domain', 'shared'],
  },
  {
    type: 'domain',
    folder: 'src/domain',
    what: 'the rules: billing, keys, limits, pricing, the relay engine, translations, batches, video tasks, webhooks; its ports in src/domain/ports',
    mayImport: ['schemas', 'gateway-config', 'shared'],
    packages: ['pg', 'pg-*', '@aws-sdk/*', '@smithy/*', 'fastify', 'fastify-*', '@fastify/*', '@temporalio/*', 'node:fs', 'node:fs/*', 'fs', 'fs/*', 'node:http', 'node:https', 'http', 'https', 'node:net', 'node:dns', 'node:dns/*', 'node:child_process'],
  },
  {
    type: 'upstream',
    folder: 'src/upstream',
    what: 'adapters to the providers: one per channel type, implementing the domain\'s ports; the public POST of webhooks',
    mayImport: ['domain', 'schemas', 'gateway-config', 'observability', 'shared'],
  },
  {
    type: 'db',
    folder: 'src/db',
    what: 'PostgreSQL and PGlite: the pool, migrations, SQL functions, the repositories of the domain\'s ports, the key change bus',
    mayImport: ['domain', 'shared'],
    typesOnly: ['gateway-config'],
  },
  {
    type: 'stores',
    folder: 'src/stores',
    what: 'the object stores behind the ObjectStore port: files under DATA_DIR, or any S3 API',
    mayImport: ['domain', 'shared'],
  },
  {
    type: 'gateway-config',
    folder: 'src/gateway-config',
    what: 'the channels-and-prices file: schema, load, ${VAR} interpolation, lookups, the built-in config',
    mayImport: ['domain', 'shared'],
  },
  {
    type: 'observability',
    folder: 'src/observability',
    what: 'Prometheus metrics and their server',
    mayImport: ['domain', 'db', 'shared'],
  },
  {
    type: 'workflows',
    folder: 'src/workflows',
    what: 'durable processes in the Temporal sandbox (no Node built-ins)',
    mayImport: ['domain'],
    typesOnly: ['activities'],
  },
  {
    type: 'activities',
    folder: 'src/activities',
    what: 'thin activities over domain services; each honours cancellation',
    mayImport: ['domain', 'shared'],
    typesOnly: ['gateway-config', 'temporal'],
  },
  {
    type: 'temporal',
    folder: 'src/temporal',
    what: 'the Temporal side: workflow starters (the domain\'s starter ports), the dev server, the CLI, parked activities, histories',
    mayImport: ['domain', 'worker', 'shared'],
    typesOnly: ['workflows'],
  },
  {
    type: 'worker',
    folder: 'src/worker',
    what: 'the worker: its options, interceptors and the build\'s workflow bundle',
    mayImport: ['activities', 'domain', 'shared'],
    typesOnly: ['observability', 'workflows'],
  },
  {
    type: 'runtime',
    folder: 'src/runtime',
    what: 'the composition root and process lifecycle',
    mayImport: ['*'],
  },
  {
    type: 'cli',
    folder: 'src/cli',
    what: 'the gateway command',
    mayImport: ['runtime', 'temporal', 'db', 'domain', 'shared'],
  },
  {
    type: 'simulator',
    folder: 'src/simulator',
    what: 'the upstream simulator: a stand-in provider for npm start, tests and benchmarks',
    mayImport: ['shared'],
  },
  {
    type: 'shared',
    folder: 'src/*.ts',
    what: 'small helpers every layer may use: the environment\'s config, address checks, private files, background repeats, tracing spans, field copies',
    mayImport: [],
    // Not a boundaries element (its patterns match folders): imports of these files are not checked.
    element: false,
  },
];
