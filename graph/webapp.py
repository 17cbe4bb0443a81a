"""Parley's own web app: a page at `/` and its scripts, styles and operations, all from the
package, under a policy that keeps every request the page makes on this service."""

from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from parley.graph.ide import ASSETS as GRAPHIQL_ASSETS

APP = Path(__file__).resolve().parent / "static" / "app"
APP_PATH = "/app"
"""Where the app's files are served; like GraphiQL's, they need no token."""
GRAPHQL_WS = GRAPHIQL_ASSETS / "graphql-ws.min.js"
"""The websocket client, the copy pinned for GraphiQL (see its manifest and licence)."""

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'self'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
"""Scripts, styles and connections (websockets included) from this origin only; no inline code."""

PAGE = (APP / "index.html").read_text(encoding="utf-8")
OPEN = '<meta name="parley-tokens" content="none" />'
LOCKED = '<meta name="parley-tokens" content="required" />'
"""What the page tells the app of the server's tokens: with them, it asks for one before sending
anything, rather than after a refusal (a 401 it could have known)."""


def page_for(tokens_required: bool) -> Callable[[Request], Awaitable[Response]]:
    html = PAGE.replace(OPEN, LOCKED) if tokens_required else PAGE

    async def page(request: Request) -> Response:
        base = request.scope.get("root_path", "") + "/"
        headers = {"content-security-policy": CONTENT_SECURITY_POLICY, "cache-control": "no-cache"}
        based = html.replace('<base href="/" />', f'<base href="{base}" />')
        return HTMLResponse(based, headers=headers)

    return page


async def graphql_ws(request: Request) -> Response:
    return FileResponse(GRAPHQL_WS, media_type="text/javascript")


def webapp_routes(tokens_required: bool) -> list[BaseRoute]:
    return [
        Route("/", page_for(tokens_required)),
        Route(APP_PATH + "/vendor/graphql-ws.min.js", graphql_ws),
        Mount(APP_PATH, app=StaticFiles(directory=APP), name="app"),
    ]
