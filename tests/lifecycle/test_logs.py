"""Log lines carry what they are about: fields set for a task reach every line it logs, as
`key=value` or as JSON fields."""

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from parley.lifecycle import logs


@pytest.fixture
def captured(request: pytest.FixtureRequest) -> Iterator[io.StringIO]:
    """The root handler `logs.configure` installs, writing to a buffer; the root logger's own
    handlers and level are put back after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    logs.configure(request.param)
    buffer = io.StringIO()
    handler = root.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(buffer)
    yield buffer
    root.handlers[:] = handlers
    root.setLevel(level)


def test_about_adds_fields_for_the_block_and_nests() -> None:
    with logs.about(episode="e1", attempt=2):
        with logs.about(worker="w"):
            assert logs.current() == {"episode": "e1", "attempt": "2", "worker": "w"}
        assert logs.current() == {"episode": "e1", "attempt": "2"}
    assert logs.current() == {}


async def test_tasks_started_inside_carry_the_fields_and_keep_theirs_apart() -> None:
    async def seen(episode: str) -> dict[str, str]:
        with logs.about(episode=episode):
            await asyncio.sleep(0)
            return logs.current()

    with logs.about(worker="w"):
        found = list(await asyncio.gather(seen("a"), seen("b")))
    assert found == [{"worker": "w", "episode": "a"}, {"worker": "w", "episode": "b"}]


@pytest.mark.parametrize("captured", ["plain"], indirect=True)
def test_plain_lines_end_with_the_fields(captured: io.StringIO) -> None:
    with logs.about(episode="e1", request="r9"):
        logging.getLogger("parley.test").info("started")
    line = captured.getvalue().strip()
    assert line.endswith("INFO parley.test started episode=e1 request=r9")


@pytest.mark.parametrize("captured", ["json"], indirect=True)
def test_json_lines_are_objects_with_the_fields(captured: io.StringIO) -> None:
    with logs.about(episode="e1", attempt=3):
        logging.getLogger("parley.test").warning("slow")
    record = json.loads(captured.getvalue())
    assert {k: record[k] for k in ("level", "logger", "message", "episode", "attempt")} == {
        "level": "WARNING",
        "logger": "parley.test",
        "message": "slow",
        "episode": "e1",
        "attempt": "3",
    }
