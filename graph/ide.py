"""GraphiQL served from the package: the page, its pinned assets, and a policy that keeps
every request it makes on this service."""

import hashlib
import secrets
from pathlib import Path
from string import Template

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent / "static"
ASSETS = STATIC / "graphiql"
ASSETS_PATH = "/graphql/static"
"""Where the assets are served; they need no token (the browser fetches them without headers)."""

PAGE = Template((STATIC / "graphiql.html").read_text(encoding="utf-8"))
REVISION = hashlib.sha256((ASSETS / "manifest.json").read_bytes()).hexdigest()[:12]
"""Changes whenever an asset does, so browsers never mix cached files of two versions."""


def content_security_policy(nonce: str) -> str:
    """Scripts, styles, fonts and connections (websockets included) from this origin only."""
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' 'nonce-{nonce}'",
            "style-src 'self' 'unsafe-inline'",
            "font-src 'self' data:",
            "img-src 'self' data:",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


def graphiql_page(request: Request) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    html = PAGE.substitute(
        assets=request.scope.get("root_path", "") + ASSETS_PATH, revision=REVISION, nonce=nonce
    )
    return HTMLResponse(html, headers={"content-security-policy": content_security_policy(nonce)})


def graphiql_assets() -> Mount:
    return Mount(ASSETS_PATH, app=StaticFiles(directory=ASSETS), name="graphiql-assets")
