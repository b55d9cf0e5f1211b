#!/usr/bin/env bash
# Our breadth first against stateright's, side by side in one run: every
# bundled model, FIXED x FIXED, rounds alternated (ours, then stateright's,
# on the same binary and model), medians of `check`'s own time column in
# ms. stateright reduces no symmetry: where clients are interchangeable it
# explores more states, and ours runs a third time with `--no-symmetry`,
# on the same graph as stateright's. Prints a Markdown table
# (docs/performance.md).
#   bash benches/engines/bfs_vs_stateright.sh [ROUNDS] [BINARY]
# BINARY defaults to the test build (`cargo build --profile test-release`).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${1:-5}"
BIN="${2:-target/test-release/mcp-streamable}"
[ -x "$BIN" ] || cargo build --profile test-release -q --bin mcp-streamable
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
for f in models/*.json; do
    model="$(basename "$f" .json)"
    for round in $(seq "$ROUNDS"); do
        for run in "bfs --search bfs" "stateright --search stateright" "plain --search bfs --no-symmetry"; do
            read -r label args <<< "$run"
            # shellcheck disable=SC2086
            "$BIN" check --model "$model" --server FIXED --client FIXED --threads 2 \
                $args --out "$OUT/traces" 2>/dev/null \
                | awk -v m="$model" -v s="$label" '$1 == m { print s, $0 }' >> "$OUT/runs.txt" || true
        done
    done
done
python3 - "$OUT/runs.txt" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) (\S+)\s+\S+ x \S+\s+(holds|\S+ \(\d+ steps\)|bounded.*?)\s+(\d+)\s+\d+\s+(\d+)ms", line)
    if m:
        runs.setdefault(m[2], {}).setdefault(m[1], []).append((m[3], int(m[4]), int(m[5])))
print("| model (FIXED x FIXED) | verdict | states [stateright's] | ours, ms | ours without symmetry, ms | stateright, ms | ratio (same states) |")
print("|---|---|---|---|---|---|---|")
slower = 0
for model, by in sorted(runs.items()):
    ours, theirs = by.get("bfs", []), by.get("stateright", [])
    if not ours or not theirs:
        continue
    o = statistics.median(t for _, _, t in ours)
    t = statistics.median(t for _, _, t in theirs)
    same = theirs[0][1] == ours[0][1]
    states = f"{ours[0][1]:,}" + ("" if same else f" [{theirs[0][1]:,}]")
    plain = by.get("plain", [])
    p = statistics.median(t for _, _, t in plain) if plain else None
    # Where symmetry folds states, the like-for-like time is ours without it.
    mine = o if same or p is None else p
    ratio = f"{mine / t:.2f}" if t else "–"
    slower += mine > t
    shown = "–" if same or p is None else f"{p:g}"
    print(f"| `{model}` | {ours[0][0]} | {states} | {o:g} | {shown} | {t:g} | {ratio} |")
print(f"\n{slower} models where our median (on stateright's states) is above stateright's")
PY
