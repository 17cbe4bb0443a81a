"""What every process reads from its environment: Sotopia's Redis variables too, and limits."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from parley.lifecycle.settings import RunSettings
from parley.storage.durability import ReplicaAcks
from parley.storage.sentinel import SentinelTarget, parse


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No variable of the test run's own, and no `.env` file to read."""
    for name in (
        "REDIS_URL",
        "REDIS_OM_URL",
        "PARLEY_REDIS_URL",
        "PARLEY_CONCURRENCY",
        "PARLEY_DATA_DIR",
        "PARLEY_SENTINELS",
        "PARLEY_SENTINEL_SERVICE",
        "PARLEY_SENTINEL_PASSWORD",
        "PARLEY_REDIS_PASSWORD",
        "PARLEY_REPLICAS_ACKED",
        "PARLEY_REPLICA_ACK_TIMEOUT",
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


def test_sentinels_in_settings_are_the_sentinel_url_every_process_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PARLEY_SENTINELS", "s1:26379,s2:26380")
    monkeypatch.setenv("PARLEY_SENTINEL_SERVICE", "parley")
    monkeypatch.setenv("PARLEY_REDIS_PASSWORD", "data/pass")
    monkeypatch.setenv("PARLEY_SENTINEL_PASSWORD", "watch")
    url = RunSettings().redis_url
    assert url is not None and url.startswith("redis+sentinel://")
    assert parse(url) == SentinelTarget(
        (("s1", 26379), ("s2", 26380)),
        "parley",
        password="data/pass",
        sentinel_password="watch",
    )


def test_a_sentinel_url_is_read_as_any_redis_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "redis+sentinel://:pw@h1,h2:5000/parley")
    assert RunSettings().redis_url == "redis+sentinel://:pw@h1,h2:5000/parley"


@pytest.mark.parametrize(
    "environment",
    [
        {"REDIS_URL": "redis+sentinel://h1:1"},
        {"REDIS_URL": "rediss+sentinel://h1:1/svc"},
        {"REDIS_URL": "redis://h:1/0", "PARLEY_SENTINELS": "h1:1"},
        {"PARLEY_SENTINELS": "h1:port"},
    ],
)
def test_a_sentinel_setting_that_cannot_work_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str]
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        RunSettings()


def test_acknowledged_writes_wait_for_replicas_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert RunSettings().replica_acks() is None
    monkeypatch.setenv("PARLEY_REPLICAS_ACKED", "2")
    monkeypatch.setenv("PARLEY_REPLICA_ACK_TIMEOUT", "0.25")
    assert RunSettings().replica_acks() == ReplicaAcks(2, 0.25)
    assert ReplicaAcks(2, 0.25).timeout_ms == 250
