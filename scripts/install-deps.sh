#!/usr/bin/env bash
# Installs exactly what package-lock.json pins, with `npm ci`.
#
# The lock lists every platform build of the optional native packages (@swc/core-*, @unrs/resolver-binding-*),
# so `npm ci` accepts it on any platform. @swc/core is pinned to 1.16.18 (devDependencies) and unrs-resolver to 1.12.2
# (overrides) because the registry the lock is made from (registry.npmjs.org as seen from the development
# machines) has no macOS, Windows or most other non-x64-Linux builds of the newer versions, and a lock without
# them is one `npm ci` rejects. Dependency install scripts are declined by name (package.json `allowScripts`,
# npm 11); none is needed: see "Installing" in docs/deployment.md.
#
# When npm rejects the lock as out of sync with package.json, this prints the lines that say why and one
# sentence on what to do, instead of npm's usage text.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if npm ci --no-audit --no-fund >"$log" 2>&1; then
  cat "$log"
  exit 0
fi
if grep -q "can only install packages when your package.json and package-lock.json" "$log"; then
  grep -E '^npm error (Missing|Invalid):' "$log" | head -n 10 >&2 || true
  echo "[setup] npm ci refused package-lock.json: it does not match package.json (lines above). Run \`npm install\`," \
    "check the change to package-lock.json and commit it." >&2
else
  cat "$log" >&2
fi
exit 1
