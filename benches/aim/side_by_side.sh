#!/usr/bin/env bash
# Issue 11's speed aim, side by side: builds of `mcp-streamable` run the aim
# model (models/large `three_clients_calls`, FIXED x FIXED, depth first)
# round after round, the builds' order rotated each round, and the medians
# of wall and CPU (user+sys) time printed per build. This host's speed
# swings by 10-25% from one stretch to the next: a figure means something
# beside another build measured in the same rounds (docs/performance.md).
#   bash benches/aim/side_by_side.sh ROUNDS THREADS BUILD...
# e.g. copy target/checker/mcp-streamable of two commits to /tmp and pass
# both. 300 k states/s is 2.665 s for the model's 799,531 states.
set -euo pipefail
rounds=$1 threads=$2
shift 2
builds=("$@")
models="$(cd "$(dirname "$0")/../.." && pwd)/models/large"
out="$(mktemp -d)"
n=${#builds[@]}
declare -a wall cpu
for round in $(seq 1 "$rounds"); do
    for k in $(seq 0 $((n - 1))); do
        j=$(((k + round) % n))
        /usr/bin/time -f "%e %U %S" -o "$out/time" "${builds[$j]}" check --models "$models" \
            --model three_clients_calls --server FIXED --client FIXED --search dfs \
            --threads "$threads" --out "$out/check" > "$out/check.txt" 2>&1
        grep -q "799531" "$out/check.txt" || { echo "${builds[$j]}: not 799531 states" >&2; cat "$out/check.txt" >&2; exit 1; }
        read -r e u s < "$out/time"
        wall[j]="${wall[j]:-} $e"
        cpu[j]="${cpu[j]:-} $(python3 -c "print(round($u + $s, 2))")"
    done
done
median() { python3 -c 'import statistics,sys; print(round(statistics.median(float(x) for x in sys.argv[1:]), 3))' "$@"; }
for j in $(seq 0 $((n - 1))); do
    # shellcheck disable=SC2086
    echo "${builds[$j]}: wall median $(median ${wall[j]}) s, cpu median $(median ${cpu[j]}) s"
    echo "    wall:${wall[j]}"
done
rm -rf "$out"
