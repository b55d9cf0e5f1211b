# An official Python SDK server (with an in-memory event store) for our client:
# and for probe: tools echo, notify, test_tool_with_progress, test_reconnection,
# slow_progress (the call the prober cancels halfway), test_param_headers (SEP-2243's
# x-mcp-header).
# Loopback only.
import asyncio
import itertools
import sys
from typing import Annotated

import anyio
import uvicorn
from pydantic import Field
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventMessage, EventStore


class Store(EventStore):
    def __init__(self):
        self.events, self.n = [], itertools.count(1)

    async def store_event(self, stream_id, message):
        event_id = f"{stream_id}::{next(self.n)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        ids = [e[0] for e in self.events]
        if last_event_id not in ids:
            return None
        i = ids.index(last_event_id)
        stream = self.events[i][1]
        for event_id, s, m in self.events[i + 1:]:
            if s == stream and m is not None:
                await send_callback(EventMessage(m, event_id))
        return stream


mcp = MCPServer("py-interop-server")


@mcp.tool()
def echo(text: str) -> str:
    """Echoes its text."""
    return text


@mcp.tool()
def test_param_headers(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    priority: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Priority"})] = 0,
    verbose: Annotated[bool, Field(json_schema_extra={"x-mcp-header": "Verbose"})] = False,
    query: str = "",
) -> str:
    """Mirrors its annotated arguments as Mcp-Param-* headers (SEP-2243), which the SDK
    checks on 2026-07-28 calls."""
    return f"headers agreed with: region={region} priority={priority} verbose={verbose}"


_later = set()


@mcp.tool()
async def notify(ctx: Context, delay_ms: int = 0) -> str:
    """Sends notifications/tools/list_changed after delay_ms: to the calling session's
    GET stream (2025 era; the SDK drops it for a 2026-07-28 call) and to every
    `subscriptions/listen` stream (2026-07-28, through the server's subscription bus)."""
    delay = min(max(delay_ms, 0), 10000)
    session = ctx.session

    async def later():
        await asyncio.sleep(delay / 1000)
        await session.send_tool_list_changed()
        await ctx.notify_tools_changed()

    task = asyncio.get_running_loop().create_task(later())
    _later.add(task)
    task.add_done_callback(_later.discard)
    return f"notifying in {delay} ms"


@mcp.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress three times."""
    for p in (0, 50, 100):
        await ctx.report_progress(p, 100)
        await anyio.sleep(0.02)
    return "done"


@mcp.tool()
async def slow_progress(ctx: Context, steps: int = 10, step_ms: int = 100) -> str:
    """Reports progress `steps` times, `step_ms` apart, then answers: the call the prober
    cancels halfway (A4 after a cancellation)."""
    n = min(max(steps, 0), 100)
    gap = min(max(step_ms, 0), 1000)
    for i in range(1, n + 1):
        await anyio.sleep(gap / 1000)
        await ctx.report_progress(i, n)
    return f"{n} steps"


@mcp.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes the SSE stream, answers after the client resumed."""
    # mcp 2.3.0 writes the stream's priming event (its only event id) in a task that
    # starts beside the tool: a close before that write ends the stream with no id, and
    # nothing can resume it (seen once in CI on a cold machine: our client then rightly
    # reports "cannot be resumed"). Waiting lets the priming event reach the wire first.
    await anyio.sleep(0.2)
    await ctx.close_sse_stream()
    await anyio.sleep(0.6)
    return "Reconnection test completed"


app = mcp.streamable_http_app(event_store=Store(), retry_interval=300)
print("py-server ready", flush=True)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
