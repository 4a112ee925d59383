#!/usr/bin/env bash
# Installs exactly what package-lock.json pins. `npm ci` first; if npm rejects the lock as out of sync with
# package.json, falls back to `npm install` and fails if that changed the lock.
#
# Why the fallback: the committed lock lists only the Linux builds of some optional platform packages
# (@swc/core-*, @unrs/resolver-binding-*): the registry mirror it was made with has no others. npm 11's `npm ci`
# counts the missing ones as "Missing: ... from lock file"; `npm install` skips them and installs the same
# versions without touching the lock.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if npm ci --no-audit --no-fund 2>&1 | tee "$log"; then
  exit 0
fi
if ! grep -q "can only install packages when your package.json and package-lock.json" "$log"; then
  exit 1
fi
echo "[setup] npm ci rejected the lock file (see scripts/install-deps.sh); installing with npm install instead"
before=$(sha256sum package-lock.json)
npm install --no-audit --no-fund
if [ "$(sha256sum package-lock.json)" != "$before" ]; then
  echo "[setup] npm install changed package-lock.json: package.json and the lock really disagree; commit a fixed lock" >&2
  exit 1
fi
