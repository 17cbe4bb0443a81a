"""Parley's own web app: a page at `/` and its scripts, styles and operations, all from the
package, under a policy that keeps every request the page makes on this service."""

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from graph.ide import ASSETS as GRAPHIQL_ASSETS

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


async def page(request: Request) -> Response:
    base = request.scope.get("root_path", "") + "/"
    html = PAGE.replace('<base href="/" />', f'<base href="{base}" />')
    headers = {"content-security-policy": CONTENT_SECURITY_POLICY, "cache-control": "no-cache"}
    return HTMLResponse(html, headers=headers)


async def graphql_ws(request: Request) -> Response:
    return FileResponse(GRAPHQL_WS, media_type="text/javascript")


def webapp_routes() -> list[BaseRoute]:
    return [
        Route("/", page),
        Route(APP_PATH + "/vendor/graphql-ws.min.js", graphql_ws),
        Mount(APP_PATH, app=StaticFiles(directory=APP), name="app"),
    ]
