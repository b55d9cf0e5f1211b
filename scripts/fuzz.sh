#!/usr/bin/env bash
# Runs every cargo-fuzz target for FUZZ_SECONDS seconds each (default 60), one
# after another. Installs cargo-fuzz from crates.io when it is missing.
#
#   scripts/fuzz.sh                  # all targets
#   scripts/fuzz.sh jsonrpc endpoint # some targets
#   FUZZ_SECONDS=600 scripts/fuzz.sh
#
# cargo-fuzz needs nightly-only flags (sanitizers); RUSTC_BOOTSTRAP=1 lets the
# stable toolchain accept them. A crash stops the script (non-zero exit) and
# leaves the input under fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked || cargo install cargo-fuzz
fi

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(sse_decoder jsonrpc endpoint client)
fi

for target in "${targets[@]}"; do
    echo "=== fuzz target ${target}: ${FUZZ_SECONDS}s ==="
    corpus="${root}/fuzz/corpus/${target}"
    mkdir -p "${corpus}"
    dirs=("${corpus}")
    # Committed seed inputs, read but never written.
    if [ -d "fuzz/seeds/${target}" ]; then
        dirs+=("${root}/fuzz/seeds/${target}")
    fi
    extra=()
    case "${target}" in
        # Structure-aware: long inputs mean long operation sequences, so do not
        # let libFuzzer ramp the input length up slowly.
        endpoint|client) extra+=(-len_control=0 -max_len=4096) ;;
    esac
    if [ -f "fuzz/dicts/${target}.dict" ]; then
        extra+=("-dict=${root}/fuzz/dicts/${target}.dict")
    fi
    cargo fuzz run "${target}" "${dirs[@]}" -- \
        -max_total_time="${FUZZ_SECONDS}" -rss_limit_mb=2048 -print_final_stats=1 \
        "${extra[@]}"
done
