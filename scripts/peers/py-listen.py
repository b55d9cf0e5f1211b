# subscriptions/listen over real HTTP with the official Python SDK (2026-07-28):
# a modern client listens for tool-list changes; a session-era client keeps its
# session (and its standalone GET); a second modern client calls the `notify`
# tool, whose broadcast must reach the listen (another session task of the
# server) and the session-era client, once each.
import sys
import anyio
from mcp import Client

async def main(url: str) -> None:
    legacy_heard = []

    async def on_message(message) -> None:
        text = repr(message)
        if "tools/list_changed" in text or "ToolListChanged" in text:
            legacy_heard.append(text)

    with anyio.fail_after(20):
        async with Client(url, mode="legacy", message_handler=on_message) as old:
            await old.list_tools()  # the session is up, its GET open
            async with Client(url, mode="2026-07-28") as listener:
                async with listener.listen(tools_list_changed=True) as sub:
                    async with Client(url, mode="2026-07-28") as caller:
                        await caller.call_tool("notify", {})
                    with anyio.fail_after(5):
                        async for event in sub:
                            print(f"py-listen: listen got {event!r}")
                            break
            with anyio.fail_after(5):
                while not legacy_heard:
                    await anyio.sleep(0.05)
            await anyio.sleep(0.3)  # time for a duplicate to show up
    if len(legacy_heard) != 1:
        raise SystemExit(f"py-listen: the session-era client heard {len(legacy_heard)} list changes, not 1")
    print(f"py-listen ok: listen=1 legacy={len(legacy_heard)}")

anyio.run(main, sys.argv[1])
