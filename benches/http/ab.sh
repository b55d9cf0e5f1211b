#!/usr/bin/env bash
# A/B of two builds of `serve` (e.g. before and after a change), side by side
# on loopback: ROUNDS rounds, A and B alternating, sequential (c=1) and 32
# concurrent tools/call on one session, and churn. Prints every figure and
# the medians with the B/A ratio.
#   ROUNDS=3 SECONDS_PER_RUN=5 bash benches/http/ab.sh OLD_BINARY NEW_BINARY
# Build the old one from a worktree: git worktree add /tmp/old REV &&
#   (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target cargo build --release --bin mcp-streamable)
set -euo pipefail
cd "$(dirname "$0")/../.."
A="$1"; B="$2"
ROUNDS="${ROUNDS:-3}"; SECS="${SECONDS_PER_RUN:-5}"
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null 2>&1 || { echo "needs wrk"; exit 1; }; }
PIDS=(); trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT
"$A" serve --addr 127.0.0.1:21011 > /dev/null 2>&1 & PIDS+=($!)
"$B" serve --addr 127.0.0.1:21012 > /dev/null 2>&1 & PIDS+=($!)
sleep 1
. benches/http/sid.sh
OUT="$(mktemp)"
echo "load before: $(cat /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
    for side in A B; do
        port=21011; [ "$side" = B ] && port=21012
        url="http://127.0.0.1:$port/mcp"; s=$(sid "$url")
        for c in 1 32; do
            r=$(SID="$s" wrk -t1 -c$c -d${SECS}s --latency -s benches/http/mcpcall.lua "$url" | grep RESULT)
            echo "round=$round side=$side c=$c $r" | tee -a "$OUT"
        done
        r=$(wrk -t1 -c1 -d${SECS}s -s benches/http/churn.lua "$url" | grep RESULT)
        echo "round=$round side=$side churn $r" | tee -a "$OUT"
    done
done
echo "load after: $(cat /proc/loadavg)"
python3 - "$OUT" <<'PY'
import re, statistics, sys
v = {}
for line in open(sys.argv[1]):
    m = re.search(r"side=(\w) (c=\d+|churn) RESULT (?:rps|sessions_per_s)=([\d.]+)", line)
    if m:
        v.setdefault((m[1], m[2]), []).append(float(m[3]))
for k in ["c=1", "c=32", "churn"]:
    a, b = statistics.median(v[("A", k)]), statistics.median(v[("B", k)])
    print(f"{k}: A median {a:.0f}, B median {b:.0f}, B/A {b / a:.2f}")
PY
