#!/usr/bin/env bash
# The run path from a production install, as an operator does it: a copy of the committed tree,
# `npm ci --omit=dev --engine-strict` (no dev dependency, and every engine range must admit the
# Node.js that runs it: the README promises Node 20), `npm start`, one request, SIGTERM.
# Prints one line; exit 0 when the service answered and stopped cleanly.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$work") || { echo "production install: cannot copy the tree"; exit 1; }
cd "$work"
if ! npm ci --omit=dev --engine-strict --prefer-offline --no-audit --no-fund >install.log 2>&1; then
  echo "production install: npm ci --omit=dev failed"; tail -20 install.log; exit 1
fi
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
TESSERA_PORT=$port TESSERA_LOG_LEVEL=warning npm start >start.log 2>&1 &
pid=$!
status=000
for _ in $(seq 1 300); do
  status=$(curl -s -o /dev/null -w '%{http_code}' -I "http://127.0.0.1:$port/0.1/status" || true)
  [ "$status" = 200 ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
# npm start runs bun below a shell: stop the service itself (the deepest process) as a supervisor
# would; npm then exits with its code.
leaf=$pid
while child=$(pgrep -P "$leaf" | head -1) && [ -n "$child" ]; do leaf=$child; done
kill -TERM "$leaf" 2>/dev/null
wait "$pid"; code=$?
if [ "$status" != 200 ] || [ "$code" != 0 ]; then
  echo "production install: HEAD /0.1/status answered $status, npm start exited $code"; cat start.log; exit 1
fi
echo "production install: npm ci --omit=dev && npm start answered 200 and stopped cleanly"
