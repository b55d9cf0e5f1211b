#!/usr/bin/env bash
# Issue 67's speed aim, side by side: builds of `mcp-streamable` run the aim
# model (models/large `three_clients_calls`, FIXED x FIXED, depth first)
# round after round, the builds' order rotated each round, and the medians
# of wall time, CPU (user+sys) time and `check`'s own time column printed
# per build, with the rate that column gives. This host's speed swings by
# 10-25% from one stretch to the next: a figure means something beside
# another build measured in the same rounds (docs/performance.md).
#   bash benches/aim/side_by_side.sh ROUNDS THREADS BUILD...
# e.g. copy target/checker/mcp-streamable of two commits to /tmp and pass
# both. Every build must say `holds` with the same number of states: a
# build that explores other states is not measured against the others.
set -euo pipefail
rounds=$1 threads=$2
shift 2
builds=("$@")
models="$(cd "$(dirname "$0")/../.." && pwd)/models/large"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
n=${#builds[@]}
declare -a wall cpu own
states=""
for round in $(seq 1 "$rounds"); do
    for k in $(seq 0 $((n - 1))); do
        j=$(((k + round) % n))
        /usr/bin/time -f "%e %U %S" -o "$out/time" "${builds[$j]}" check --models "$models" \
            --model three_clients_calls --server FIXED --client FIXED --search dfs \
            --threads "$threads" --out "$out/check" > "$out/check.txt" 2>&1
        # model  server x client  verdict  states  depth  time  expected
        line=$(grep "FIXED x FIXED" "$out/check.txt" || true)
        read -r _ _ _ _ verdict count _ ms _ <<< "$line"
        if [[ "${verdict:-}" != holds ]]; then
            echo "${builds[$j]}: not holds" >&2
            cat "$out/check.txt" >&2
            exit 1
        fi
        if [[ -n "$states" && "$count" != "$states" ]]; then
            echo "${builds[$j]}: $count states, another build $states" >&2
            exit 1
        fi
        states=$count
        read -r e u s < "$out/time"
        wall[j]="${wall[j]:-} $e"
        cpu[j]="${cpu[j]:-} $(python3 -c "print(round($u + $s, 2))")"
        own[j]="${own[j]:-} $(python3 -c "
t = '$ms'
print(float(t[:-2]) / 1000 if t.endswith('ms') else float(t[:-1]))")"
    done
done
median() { python3 -c 'import statistics,sys; print(round(statistics.median(float(x) for x in sys.argv[1:]), 4))' "$@"; }
echo "three_clients_calls: $states states"
for j in $(seq 0 $((n - 1))); do
    # shellcheck disable=SC2086
    m=$(median ${own[j]})
    # shellcheck disable=SC2086
    echo "${builds[$j]}: check's time median ${m} s ($(python3 -c "print(round($states / $m / 1000))") k states/s), wall median $(median ${wall[j]}) s, cpu median $(median ${cpu[j]}) s"
    echo "    check's time:${own[j]}"
done
