"""The API's settings: its own on top of every process's, and comma-separated lists."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from parley.graph.settings import Settings, split


def test_comma_separated_settings_drop_blanks_and_spaces() -> None:
    assert split(" a, b ,,c ,") == ["a", "b", "c"]
    assert split("") == []


def test_the_api_reads_its_own_settings_and_every_process_s(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PARLEY_PORT", "9001")
    monkeypatch.setenv("PARLEY_MAX_ATTEMPTS", "5")
    settings = Settings()
    assert (settings.port, settings.max_attempts) == (9001, 5)


def test_a_port_out_of_range_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PARLEY_PORT", "70000")
    with pytest.raises(ValidationError, match="port"):
        Settings()
