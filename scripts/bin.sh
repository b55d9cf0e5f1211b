# Sourced by the scripts that run the command line: sets BIN to the binary
# they run. MCP_STREAMABLE_BIN names one built already (CI passes the test
# command's, built with rmcp and redis); otherwise a release build with the
# features given as $1 (none: the default ones).
if [ -n "${MCP_STREAMABLE_BIN:-}" ]; then
    BIN="$MCP_STREAMABLE_BIN"
else
    cargo build --release -q ${1:+--features "$1"}
    BIN="$PWD/target/release/mcp-streamable"
fi
