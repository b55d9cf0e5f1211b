# The official Python SDK client (`mcp`) as `probe-client`'s command:
# `python py-probe-client.py [legacy|auto] URL`. Connects in that mode,
# answers elicitations, calls MCP_PROBE_TOOL with MCP_PROBE_ARGUMENTS (JSON)
# MCP_PROBE_CALLS times at once (default 1; each call settles on its own, so
# one that hangs keeps the script waiting), prints the results and exits 0;
# exits 1 on any failure. No deadline of its own unless MCP_PROBE_GIVE_UP_MS
# asks: then each call is given up that long after it was sent (the SDK's
# own `read_timeout_seconds`), and the client stays connected
# MCP_PROBE_LINGER_MS, closes and exits 0; otherwise the prober bounds the run.
#
# With MCP_PROBE_LISTEN=tools it first listens for tool-list changes (a
# 2026-07-28 connection; in the session era `listen` is refused and it only
# calls) and exits 0 only once it has learned of a change: from the
# notification, or from a tools/list after a new listen's acknowledgement.
# The SDK tells the application that a listen's stream was lost
# (`SubscriptionLost`) and never listens again by itself: this script, the
# application, does.
import json
import os
import sys

import anyio
from mcp import Client
from mcp.client.subscriptions import SubscriptionLost, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult


async def elicit(context, params):
    # The application takes MCP_PROBE_ANSWER_DELAY_MS to answer (0: at once).
    await anyio.sleep(int(os.environ.get("MCP_PROBE_ANSWER_DELAY_MS") or "0") / 1000)
    return ElicitResult(action="accept", content={"response": "probe"})


async def main(url: str, mode: str) -> None:
    tool = os.environ.get("MCP_PROBE_TOOL", "test_simple_text")
    args = json.loads(os.environ.get("MCP_PROBE_ARGUMENTS", "{}"))
    calls = max(1, int(os.environ.get("MCP_PROBE_CALLS") or "1"))
    listen_for_tools = os.environ.get("MCP_PROBE_LISTEN") == "tools"
    give_up = int(os.environ.get("MCP_PROBE_GIVE_UP_MS") or "0") / 1000 or None
    linger = int(os.environ.get("MCP_PROBE_LINGER_MS") or "0") / 1000
    failures = []
    given_up = []
    learned = anyio.Event()

    async with Client(url, mode=mode, elicitation_callback=elicit) as client:

        async def listener(*, task_status=anyio.TASK_STATUS_IGNORED) -> None:
            again = False
            while True:
                try:
                    # A listen that is not acknowledged raises out of here.
                    async with client.listen(tools_list_changed=True) as sub:
                        if again:
                            # Nothing is replayed: the change may have gone
                            # with the lost stream, and only a list has it.
                            tools = await client.list_tools(cache_mode="refresh")
                            print(f"listening again; tools/list: {len(tools.tools)} tools")
                            learned.set()
                            return
                        task_status.started()
                        async for event in sub:
                            if isinstance(event, ToolsListChanged):
                                print("heard the tool-list change")
                                learned.set()
                                return
                    print("listen ended gracefully; listening again", file=sys.stderr)
                except SubscriptionLost as e:
                    print(f"listen lost ({e!r}); listening again", file=sys.stderr)
                again = True

        async def one() -> None:
            try:
                r = await client.call_tool(tool, args, read_timeout_seconds=give_up)
                print(r.model_dump_json())
                if r.is_error:
                    failures.append("tool error")
            except MCPError as e:
                # -32001: the SDK's own deadline gave the call up.
                (given_up if give_up and e.code == -32001 else failures).append(repr(e))
            except Exception as e:  # one call's failure, kept apart from the others
                failures.append(repr(e))

        async with anyio.create_task_group() as tg:
            listening = False
            if listen_for_tools:
                try:
                    await tg.start(listener)
                    listening = True
                except Exception as e:  # the session era: changes come on its GET
                    print(f"no listen ({e!r})", file=sys.stderr)
            for _ in range(calls):
                tg.start_soon(one)
            if listening:
                await learned.wait()
        if given_up and not failures:
            # The application lives on, connected, as a long-lived one does.
            print(f"py-probe-client {mode}: gave the call up; staying {linger} s", file=sys.stderr)
            await anyio.sleep(linger)
    if failures:
        print(f"py-probe-client {mode}: {failures}", file=sys.stderr)
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
