#!/usr/bin/env bash
# One command: installs wrk if missing, then runs bench/run.ts (see there for the sections).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v wrk >/dev/null 2>&1; then
  echo "installing wrk (Debian package)…" >&2
  if ! { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }; then
    echo "wrk is missing: install it (Debian/Ubuntu: sudo apt-get install -y wrk; macOS: brew install wrk)" >&2
    exit 1
  fi
fi
# The oidc-peer section runs panva's oidc-provider (a devDependency) under Node.
if ! command -v node >/dev/null 2>&1; then
  echo "node is missing: the oidc-peer section needs Node.js 20 or later (BENCH_NODE names another path)" >&2
fi
exec npx bun bench/run.ts "$@"
