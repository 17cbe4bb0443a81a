"""Command-line clients of a running Parley server: they speak GraphQL over HTTP and import
nothing of the server."""
