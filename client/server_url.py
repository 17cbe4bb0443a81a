"""A Parley server as a command reaches it: the address a user gives (its root,
`http://host:8000`, or the GraphQL address they use everywhere else, `.../graphql`, with or
without `http://`) and a refusal it answers, said in words."""

import json

TOKEN_HINT = "give it with --token or $PARLEY_TOKEN"


def server_root(url: str) -> str:
    """The server's root, without a trailing `/` or `/graphql`; `http://` when no scheme is
    given (`localhost:8000`, as one types it to curl)."""
    root = url.strip().rstrip("/")
    if "://" not in root:
        root = "http://" + root
    return root.removesuffix("/graphql").rstrip("/")


def refusal(url: str, status: int, body: str) -> str:
    """What a command says when the server at `url` answers `status` with `body`: the messages
    of an `{"errors": [...]}` body, not its JSON, and for a 401 how to give a token; in one
    line (an error page's line breaks and indentation become single spaces)."""
    if status == 401:
        return f"{url} answered 401: it needs a valid access token; {TOKEN_HINT}"
    try:
        messages = [str(error["message"]) for error in json.loads(body)["errors"]]
    except (ValueError, TypeError, KeyError, IndexError):
        messages = []
    if messages:
        return "; ".join(messages)
    return f"{url} answered {status}: {' '.join(body.split())[:300]}"
