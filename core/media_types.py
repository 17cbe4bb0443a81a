"""The media types `/export` answers with, by format: the server sends them, and a client
takes nothing else as an export (a proxy's sign-in page answered with 200 is not one)."""

EXPORT_MEDIA_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv"}
