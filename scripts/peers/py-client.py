# The official Python SDK client against an MCP server: initialize (mode legacy),
# auto (probes server/discover first, falls back to initialize), or 2026-07-28
# (the 2026-07-28 era only); a tool call with progress, the reconnection tool (a
# resumption after the server closes the stream; in the 2026-07-28 era the server
# answers on the same stream), and the session end on exit.
import sys
import anyio
from mcp import Client

async def main(url: str, mode: str, expect: str | None) -> None:
    progress = []

    async def on_progress(value, total=None, message=None):
        progress.append(value)

    with anyio.fail_after(20):
        async with Client(url, mode=mode) as client:
            await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
            if len(progress) < 3:
                raise SystemExit(f"py-client {mode}: expected 3 progress notifications, got {len(progress)}")
            r = await client.call_tool("test_reconnection", {})
            text = r.content[0].text if r.content else ""
            if "Reconnection" not in text:
                raise SystemExit(f"py-client {mode}: reconnection result {r!r}")
            version = client.protocol_version
            if expect and version != expect:
                raise SystemExit(f"py-client {mode}: negotiated {version}, expected {expect}")
    print(f"py-client {mode} ok: version={version} progress={len(progress)} reconnection=ok")

anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "auto",
          sys.argv[3] if len(sys.argv) > 3 else None)
