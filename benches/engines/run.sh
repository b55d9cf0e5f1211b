#!/usr/bin/env bash
# The checker and loom on the same races, side by side in one run: for each
# model and preset pair that tests/loom_races.rs explores, the checker's
# states, depth and time (to the counterexample, or to exhaust the bounds)
# next to loom's executions and time at preemption bound 2. Prints a
# Markdown table (docs/performance.md).
#   bash benches/engines/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q
cargo test --profile test-release -q --test loom_races --no-run 2>/dev/null
OUT="$(mktemp -d)"
for model in stale_notification_after_registration competing_get_streams_2 response_on_background_get; do
    target/release/mcp-streamable check --model "$model" --threads 1 --out "$OUT/check" >> "$OUT/check.txt"
done
cargo test --profile test-release --test loom_races -- --nocapture --test-threads=1 2>/dev/null | grep -ao 'loom .*' > "$OUT/loom.txt" || true
python3 benches/engines/table.py "$OUT/check.txt" "$OUT/loom.txt"
