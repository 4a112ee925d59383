#!/usr/bin/env bash
# Runs before `npm start` and `npm test` (the prestart/pretest scripts), so a fresh clone needs nothing else.
# 1. Dependencies: scripts/ensure-deps.sh (`npm ci` when node_modules is missing or older than package-lock.json).
# 2. The Temporal CLI: found on PATH, at TEMPORAL_CLI_PATH or in ~/.cache/ai-gateway, else built once with
#    `go install` (src/temporal/cli.ts; under a lock in that cache, so processes started together build it once).
#    Without Go the SDK downloads a dev server on first use instead.
# 3. dist/: the TypeScript compiled by scripts/build.mjs (a second or two), when a source is newer than it.
# When everything is present this takes well under a second.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-deps.sh

node_modules/.bin/tsx src/temporal/setup.ts

# 3. The compiled gateway (scripts/build.mjs) that `npm start` and the gateway CLI run, when a source changed since.
if [ ! -f dist/.built ] || [ -n "$(find src bench console package-lock.json -newer dist/.built -print -quit)" ]; then
  node scripts/build.mjs
fi
