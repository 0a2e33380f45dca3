#!/usr/bin/env bash
# One command: installs wrk if missing, then runs bench/run.ts (see there for the sections).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v wrk >/dev/null 2>&1; then
  echo "installing wrk (Debian package)…" >&2
  apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi
exec npx bun bench/run.ts "$@"
