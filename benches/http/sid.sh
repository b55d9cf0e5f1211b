# Sourced by the HTTP benchmark scripts.
# sid URL: initialize (2025-11-25) and initialized; prints the Mcp-Session-Id.
sid() {
    local h; h=$(curl -s -D - -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}' "$1")
    local s; s=$(echo "$h" | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
    curl -s -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H "Mcp-Session-Id: $s" -H 'Mcp-Protocol-Version: 2025-11-25' -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$1"
    echo "$s"
}
