#!/usr/bin/env bash
# Debian's Chromium for the web console's browser tests (test/e2e, driven by playwright-core), installed before
# `npm test` (the pretest script) when it is missing. Playwright's own browser download needs the internet; the
# Debian package comes from the package mirror every machine here reaches. CHROMIUM_PATH names another browser.
set -euo pipefail

if [ -n "${CHROMIUM_PATH:-}" ] || [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "[setup] no Chromium at /usr/bin/chromium and no root apt-get to install it: install Debian's chromium" \
    "(or set CHROMIUM_PATH), or the console's browser tests will fail" >&2
  exit 0
fi
echo "[setup] installing Debian's chromium for the console's browser tests (first run only)"
install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
install || { apt-get update -qq && install; }
