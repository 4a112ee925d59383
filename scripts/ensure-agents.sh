#!/usr/bin/env bash
# Installs the coding agents the agent tests drive (test/agents: Claude Code, Codex and Gemini CLI, pinned by its own lock)
# when they are missing or older than that lock. Only those tests need them, so `npm start` never runs this:
# the agent tests' set-up does (test/helpers/agents.ts), and .ci/run does before `npm test`.
# Processes started together install once: the first takes a lock folder, the others wait for it.
set -euo pipefail
cd "$(dirname "$0")/../test/agents"

installed() { [ -f node_modules/.package-lock.json ] && [ ! package-lock.json -nt node_modules/.package-lock.json ]; }
installed && exit 0

lock=.install-lock
for _ in $(seq 1 600); do
  if mkdir "$lock" 2>/dev/null; then
    trap 'rmdir "$lock" 2>/dev/null || true' EXIT
    if ! installed; then
      echo "[setup] installing the coding agents of the agent tests (test/agents)"
      log=$(mktemp)
      if ! npm ci --no-audit --no-fund --loglevel=error >"$log" 2>&1; then cat "$log" >&2; rm -f "$log"; exit 1; fi
      rm -f "$log"
    fi
    exit 0
  fi
  installed && exit 0
  sleep 1
done
echo "[setup] timed out waiting for another install of test/agents (remove test/agents/$lock if none runs)" >&2
exit 1
