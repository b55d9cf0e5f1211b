#!/usr/bin/env bash
# Fleet figures, side by side on loopback in one run (docs/performance.md, "Fleets"):
#   plain   `serve` (one process, no store)
#   memory  `serve --store memory` (the fleet layer alone: one instance, its store in-process)
#   redis   `serve --store redis://` (one instance on Redis: the Redis store's cost)
#   lb1     that instance behind HAProxy (the balancer's cost)
#   lb3     three instances on Redis behind HAProxy, round-robin per request
# For each: sequential (c=1) and 32-concurrent tools/call on one session (wrk,
# benches/http/mcpcall.lua, every answer checked); ROUNDS rounds, alternating.
#   ROUNDS=2 SECONDS_PER_RUN=5 bash benches/http/fleet.sh
# Needs wrk, redis-server and haproxy (Debian; installed if missing). 2 cores
# are shared by wrk, HAProxy, Redis and every instance: lb3 measures the cost of
# spreading a session, not the capacity of three machines.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-2}"; SECS="${SECONDS_PER_RUN:-5}"
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null 2>&1 || { echo "needs wrk"; exit 1; }; }
bash scripts/install-fleet.sh >/dev/null
cargo build --release -q --features rmcp,redis
BIN="$PWD/target/release/mcp-streamable"
OUT="$(mktemp -d)"; PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT
wait_port() { for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.05; done; echo "nothing on $1"; exit 1; }
start() { "$@" > /dev/null 2>&1 & PIDS+=($!); }

REDIS=21100
start redis-server --port $REDIS --bind 127.0.0.1 --save "" --appendonly no --dir "$OUT"
wait_port $REDIS
SECRET=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
start "$BIN" serve --addr 127.0.0.1:21101
start "$BIN" serve --addr 127.0.0.1:21102 --store memory
start "$BIN" serve --addr 127.0.0.1:21103 --store redis://127.0.0.1:$REDIS --instance 0 --app-secret "$SECRET"
start "$BIN" serve --addr 127.0.0.1:21104 --store redis://127.0.0.1:$REDIS --instance 1 --app-secret "$SECRET"
start "$BIN" serve --addr 127.0.0.1:21105 --store redis://127.0.0.1:$REDIS --instance 2 --app-secret "$SECRET"
cat > "$OUT/haproxy.cfg" <<CFG
global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    option http-server-close
frontend lb1
    bind 127.0.0.1:21111
    default_backend one
frontend lb3
    bind 127.0.0.1:21113
    default_backend three
backend one
    server i0 127.0.0.1:21103
backend three
    balance roundrobin
    server i0 127.0.0.1:21103
    server i1 127.0.0.1:21104
    server i2 127.0.0.1:21105
CFG
start haproxy -f "$OUT/haproxy.cfg" -db
for p in 21101 21102 21103 21104 21105 21111 21113; do wait_port $p; done
. benches/http/sid.sh
declare -A PORT=([plain]=21101 [memory]=21102 [redis]=21103 [lb1]=21111 [lb3]=21113)
echo "load before: $(cat /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
    for side in plain memory redis lb1 lb3; do
        url="http://localhost:${PORT[$side]}/mcp"; s=$(sid "$url")
        for c in 1 32; do
            r=$(SID="$s" wrk -t1 -c$c -d${SECS}s --latency -s benches/http/mcpcall.lua "$url" | grep RESULT)
            echo "round=$round side=$side c=$c $r" | tee -a "$OUT/results"
        done
    done
done
echo "load after: $(cat /proc/loadavg)"
python3 - "$OUT/results" <<'PY'
import re, statistics, sys
v = {}
for line in open(sys.argv[1]):
    m = re.search(r"side=(\w+) c=(\d+) RESULT rps=([\d.]+) p50=([\d.]+) p99=([\d.]+) bad=(\d+)", line)
    if m:
        v.setdefault((m[1], m[2]), []).append((float(m[3]), float(m[4]), float(m[5]), int(m[6])))
print("| server | c=1 req/s | p50 / p99 ms | c=32 req/s | p50 / p99 ms | bad |")
print("|---|---|---|---|---|---|")
base = {}
for side in ["plain", "memory", "redis", "lb1", "lb3"]:
    cells, bad = [], 0
    for c in ["1", "32"]:
        runs = v[(side, c)]
        rps = statistics.median(r[0] for r in runs)
        base.setdefault(c, rps)
        cells.append(f"{rps:,.0f} ({rps / base[c]:.2f}x)")
        cells.append(f"{statistics.median(r[1] for r in runs):.2f} / {statistics.median(r[2] for r in runs):.2f}")
        bad += sum(r[3] for r in runs)
    print(f"| {side} | " + " | ".join(cells) + f" | {bad} |")
PY
