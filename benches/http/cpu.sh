#!/usr/bin/env bash
# CPU per request of one `serve` binary under wrk, with perf stat (Debian's
# linux-perf): task-clock, context switches and the syscalls that move bytes.
#   bash benches/http/cpu.sh BINARY PORT CONNECTIONS [SECONDS]
# Runs the binary's `serve` on 127.0.0.1:PORT, opens a session, warms up 2 s,
# then measures SECONDS (5) of `tools/call` and stops the server.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$1; PORT=$2; C=$3; SECS=${4:-5}
command -v perf >/dev/null || apt-get install -y -qq linux-perf >/dev/null
"$BIN" serve --addr "127.0.0.1:$PORT" > /dev/null 2>&1 &
SPID=$!
trap 'kill $SPID 2>/dev/null || true' EXIT
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
. benches/http/sid.sh
URL="http://127.0.0.1:$PORT/mcp"
S=$(sid "$URL")
SID="$S" wrk -t1 -c"$C" -d2s -s benches/http/mcpcall.lua "$URL" > /dev/null
OUT=$(mktemp)
perf stat -e task-clock,context-switches,syscalls:sys_enter_writev,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait \
    -p $SPID -o "$OUT" -- sleep "$SECS" &
PP=$!
R=$(SID="$S" wrk -t1 -c"$C" -d"${SECS}s" -s benches/http/mcpcall.lua "$URL" | grep RESULT)
wait $PP
echo "$R"
RPS=$(echo "$R" | sed 's/.*rps=\([0-9.]*\).*/\1/')
MS=$(awk '/task-clock/ {gsub(",","",$1); print $1}' "$OUT")
grep -E "task-clock|context|syscalls" "$OUT"
awk -v ms="$MS" -v rps="$RPS" -v s="$SECS" 'BEGIN { printf "cpu_us_per_request=%.1f\n", ms * 1000 / (rps * s) }'
