"""Command-line clients of a running Parley server: they speak to it over HTTP (GraphQL,
/export and /import) and import nothing of the server."""
