#!/usr/bin/env bash
# Step 1 of scripts/ensure-setup.sh, and all that `npm run test:unit` needs: dependencies installed by
# scripts/install-deps.sh (`npm ci`) when node_modules is missing or older than package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[setup] node_modules is missing or older than package-lock.json: installing dependencies"
  bash scripts/install-deps.sh
fi
