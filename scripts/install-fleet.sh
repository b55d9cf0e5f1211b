#!/usr/bin/env bash
# The fleet's real components from Debian's packages: redis-server (the
# store) and haproxy (the balancer). Idempotent; run by .ci/run before the
# tests (tests/fleet_http.rs starts its own redis-server) and by scripts/fleet.sh.
set -euo pipefail
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v haproxy >/dev/null || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
        || { $SUDO apt-get update >/dev/null && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi
# The packages' own services are not used (no systemd here; ours run on ports of their own).
# `sed -n 1p` reads all its input: `head -1` may close the pipe first, and the
# writer's SIGPIPE then fails the script under pipefail (it once stopped CI).
redis-server --version | sed -n 1p
haproxy -v | sed -n 1p
