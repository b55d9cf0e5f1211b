#!/usr/bin/env bash
# Mutation testing of the sans-IO cores with cargo-mutants (config: .cargo/mutants.toml).
#   bash scripts/mutants.sh                      every core file (hours on 2 cores)
#   bash scripts/mutants.sh -f crates/mcp-streamable/src/server/admission.rs   one file
#   bash scripts/mutants.sh --in-diff            only what the working tree changes against HEAD
#   bash scripts/mutants.sh --rmcp [-f FILE]     the rmcp adapter (crates/mcp-streamable-rmcp), feature rmcp, built
#                                                and tested with its own test files only (the loom
#                                                model skipped: too slow per mutant; run it by hand)
# Results in mutants.out/ (caught.txt, missed.txt, timeout.txt, unviable.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
# The baseline (the fast tests on the unmutated tree) always runs: a test that fails without any
# mutant would count every mutant caught (it once did: docs/testing.md, "void" rows).
case " $* " in
    *" --baseline=skip "* | *" --baseline skip "*)
        echo "scripts/mutants.sh: --baseline=skip is refused (docs/testing.md)"; exit 2 ;;
esac
command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked --version 27.1.0
args=()
if [ "${1:-}" = "--rmcp" ]; then
    shift
    case " $* " in
        *" -f "* | *" --file "* | *" --file="*) ;;
        *) set -- -f 'crates/mcp-streamable-rmcp/src/*.rs' "$@" ;;
    esac
    # -C: for the build as well as the test run, so only these targets build.
    exec cargo mutants --no-config --features rmcp --profile mutants --timeout 180 \
        -C --lib -C --test=rmcp_manager -C --test=rmcp_adapter -C --test=rmcp_props \
        "$@" -- -- --skip loom_model
fi
if [ "${1:-}" = "--in-diff" ]; then
    shift
    diff="$(mktemp)"
    git diff HEAD > "$diff"
    args+=(--in-diff "$diff")
fi
# The cores, unless files were named.
case " $* " in
    *" -f "* | *" --file "* | *" --file="*) ;;
    *) C=crates/mcp-streamable/src
       args+=(-f "$C/server/*.rs" -f "$C/client/*.rs" -f 'crates/mcp-streamable-check/src/monitor/*.rs' -f "$C/sse.rs" -f "$C/jsonrpc.rs" -f "$C/shared.rs" -f "$C/head.rs" -f "$C/mrtr/*.rs") ;;
esac
cargo mutants "${args[@]}" "$@"
