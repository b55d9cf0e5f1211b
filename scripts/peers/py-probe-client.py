# The official Python SDK client (`mcp`) as `probe-client`'s command:
# `python py-probe-client.py [legacy|auto] URL`. Connects in that mode,
# answers elicitations, calls MCP_PROBE_TOOL with MCP_PROBE_ARGUMENTS (JSON),
# prints the result and exits 0; exits 1 on any failure. No deadline of its
# own: the prober bounds the run.
import json
import os
import sys

import anyio
from mcp import Client
from mcp.types import ElicitResult


async def elicit(context, params):
    return ElicitResult(action="accept", content={"response": "probe"})


async def main(url: str, mode: str) -> None:
    tool = os.environ.get("MCP_PROBE_TOOL", "test_simple_text")
    args = json.loads(os.environ.get("MCP_PROBE_ARGUMENTS", "{}"))
    async with Client(url, mode=mode, elicitation_callback=elicit) as client:
        r = await client.call_tool(tool, args)
        print(r.model_dump_json())
        if r.is_error:
            sys.exit(1)


url = sys.argv[-1]
mode = sys.argv[1] if len(sys.argv) > 2 else "legacy"
try:
    anyio.run(main, url, mode)
except SystemExit:
    raise
except BaseException as e:  # an ExceptionGroup from the task group included
    print(f"py-probe-client {mode}: {e!r}", file=sys.stderr)
    sys.exit(1)
