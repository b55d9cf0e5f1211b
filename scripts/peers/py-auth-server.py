"""An official Python SDK server (FastMCP, stateful Streamable HTTP) that
requires a bearer token, through the SDK's own auth machinery: `token-a` is
alice, `token-b` is bob. Up to mcp 1.27.1 a session answers whoever names
its id (CVE-2026-52869 / GHSA-jpw9-pfvf-9f58); from 1.27.2 a request of
another principal gets the unknown session's 404. The same file runs on
both. Tools: echo, notify. Loopback only.
    python py-auth-server.py PORT
"""

import asyncio
import sys

import uvicorn
from pydantic import AnyHttpUrl

from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import Context, FastMCP

HOST = "127.0.0.1"
PORT = int(sys.argv[1])
PRINCIPALS = {"token-a": "alice", "token-b": "bob"}


class StaticTokens(TokenVerifier):
    async def verify_token(self, token: str) -> AccessToken | None:
        who = PRINCIPALS.get(token)
        if who is None:
            return None
        # `subject` exists from 1.27.2 on; 1.27.1's model ignores it.
        return AccessToken(token=token, client_id=who, scopes=["mcp"], expires_at=None, subject=who)


mcp = FastMCP(
    "py-auth-server",
    host=HOST,
    port=PORT,
    streamable_http_path="/mcp",
    token_verifier=StaticTokens(),
    auth=AuthSettings(
        issuer_url=AnyHttpUrl("http://127.0.0.1/issuer"),
        resource_server_url=AnyHttpUrl(f"http://{HOST}:{PORT}/mcp"),
        required_scopes=["mcp"],
    ),
)
pending: set[asyncio.Task] = set()


@mcp.tool()
async def echo(text: str) -> str:
    """Echoes the text."""
    return text


@mcp.tool()
async def notify(ctx: Context, delay_ms: int = 0) -> str:
    """Sends notifications/tools/list_changed after delay_ms, unrelated to the call."""
    session = ctx.session
    delay = min(max(delay_ms, 0), 10000)

    async def later() -> None:
        await asyncio.sleep(delay / 1000)
        try:
            await session.send_tool_list_changed()
        except Exception:
            pass  # the session is gone

    task = asyncio.create_task(later())
    pending.add(task)
    task.add_done_callback(pending.discard)
    return f"notifying in {delay} ms"


if __name__ == "__main__":
    uvicorn.run(mcp.streamable_http_app(), host=HOST, port=PORT, log_level="warning")
