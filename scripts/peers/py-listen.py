# subscriptions/listen over real HTTP with the official Python SDK (2026-07-28):
# a 2026-07-28 client listens for tool-list changes; N session-era clients (default 1)
# keep their sessions (and their standalone GETs); a second 2026-07-28 client calls the
# `notify` tool, whose broadcast must reach the listen (another session task of the
# server) and every session-era client, once each.
#
# Behind a balancer without stickiness (scripts/fleet.sh, N = 3) the listen, the
# GETs and the call land on different instances: the broadcast crosses the fleet
# (docs/fleets.md, "Broadcasts"), and a session whose requests were spread over
# several instances still hears it once.
import sys
from contextlib import AsyncExitStack
import anyio
from mcp import Client

async def main(url: str, sessions: int) -> None:
    heard = [[] for _ in range(sessions)]

    def handler(i):
        async def on_message(message) -> None:
            text = repr(message)
            if "tools/list_changed" in text or "ToolListChanged" in text:
                heard[i].append(text)
        return on_message

    with anyio.fail_after(30):
        async with AsyncExitStack() as stack:
            for i in range(sessions):
                old = await stack.enter_async_context(
                    Client(url, mode="legacy", message_handler=handler(i)))
                await old.list_tools()  # the session is up, its GET open
            # Time for every GET to reach its instance before the broadcast is made.
            await anyio.sleep(0.3)
            async with Client(url, mode="2026-07-28") as listener:
                async with listener.listen(tools_list_changed=True) as sub:
                    async with Client(url, mode="2026-07-28") as caller:
                        await caller.call_tool("notify", {})
                    with anyio.fail_after(5):
                        async for event in sub:
                            print(f"py-listen: listen got {event!r}")
                            break
            with anyio.move_on_after(5):  # a session that never hears it is counted below
                while not all(heard):
                    await anyio.sleep(0.05)
            await anyio.sleep(0.5)  # time for a duplicate to show up
    counts = [len(h) for h in heard]
    if counts != [1] * sessions:
        raise SystemExit(f"py-listen: the session-era clients heard {counts} list changes, not 1 each")
    print(f"py-listen ok: listen=1 sessions={sessions} each heard 1")

anyio.run(main, sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
