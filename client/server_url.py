"""The address of a Parley server as a user gives it to a command: its root
(`http://host:8000`) or the GraphQL address they use everywhere else (`.../graphql`)."""


def server_root(url: str) -> str:
    """The server's root, without a trailing `/` or `/graphql`."""
    root = url.strip().rstrip("/")
    return root.removesuffix("/graphql").rstrip("/")
