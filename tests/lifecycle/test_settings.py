"""What every process reads from its environment: Sotopia's Redis variables too, and limits."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from parley.lifecycle.settings import RunSettings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No variable of the test run's own, and no `.env` file to read."""
    for name in (
        "REDIS_URL",
        "REDIS_OM_URL",
        "PARLEY_REDIS_URL",
        "PARLEY_CONCURRENCY",
        "PARLEY_DATA_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("name", ["REDIS_URL", "REDIS_OM_URL", "PARLEY_REDIS_URL"])
def test_redis_is_found_by_each_of_its_names(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "redis://elsewhere:6379")
    assert RunSettings().redis_url == "redis://elsewhere:6379"


def test_unset_redis_means_the_embedded_one_in_the_data_directory() -> None:
    settings = RunSettings()
    assert settings.redis_url is None
    assert settings.data_dir == Path.home() / ".parley"


def test_a_dotenv_file_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("PARLEY_CONCURRENCY=7\n")
    assert RunSettings().concurrency == 7


def test_a_setting_out_of_its_bounds_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARLEY_CONCURRENCY", "0")
    with pytest.raises(ValidationError, match="concurrency"):
        RunSettings()
