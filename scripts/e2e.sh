#!/usr/bin/env bash
# The VS Code extension in a real VS Code UI (code-server + Debian Chromium + playwright-core).
# Builds and packages the extension, installs code-server once into ~/.cache/prism-code/e2e
# (minutes the first time, instant after), then runs tests/e2e/run.ts. Screenshots, logs and
# timings go to test-artifacts/e2e/ and test-artifacts/e2e-setup/. Idempotent; needs .venv
# (make setup) and Node 20; the set-up test needs PyPI (pip's cache makes it quick).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

# System packages: Chromium to drive, kerberos headers and ripgrep for code-server's build.
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v rg >/dev/null || missing+=(ripgrep)
[ -f /usr/include/krb5.h ] || [ -f /usr/include/krb5/krb5.h ] || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]} (Debian)"
    apt-get install -y -q "${missing[@]}" >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
  else
    echo "e2e needs these Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})" >&2
    exit 1
  fi
fi

# npm ci only when package-lock.json changed since the last install.
stamp="node_modules/.prism-lock-$(sha256sum package-lock.json | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  npm ci --no-audit --no-fund
  touch "$stamp"
fi
# package compiles first (vscode:prepublish)
npm run --silent package >/dev/null
npm run --silent compile-e2e >/dev/null

CODE_SERVER=$(tests/e2e/install-code-server.sh)

export PRISM_E2E_REPO="$REPO" \
  PRISM_E2E_PYTHON="${PRISM_E2E_PYTHON:-$REPO/.venv/bin/python}" \
  PRISM_E2E_CODE_SERVER="$CODE_SERVER" \
  PRISM_E2E_VSIX="$REPO/out/prism-code.vsix" \
  PRISM_E2E_CHROMIUM="${PRISM_E2E_CHROMIUM:-$(command -v chromium)}"
# The features, on the checkout's .venv; then a clean profile that sets itself up from the
# VSIX ("Set up prism-code", cancelled once, then accepted). Both run; either failing fails.
status=0
node out/e2e/run.js || status=1
node out/e2e/setupFlow.js || status=1
exit $status
