"""Every key Parley adds is under `parley:`, and no two of them name the same thing."""

import inspect
from collections.abc import Callable

from parley.storage import keys

SOTOPIA_MODULES = {
    keys.SOTOPIA_PROFILES_MODULE,
    keys.SOTOPIA_LOGS_MODULE,
    keys.SOTOPIA_DIMENSIONS_MODULE,
    keys.SOTOPIA_ANNOTATORS_MODULE,
}
"""The middles of Sotopia's own record keys, which are not Parley's to prefix."""


def sotopias(key: str) -> bool:
    """Whether `key` is one of Sotopia's own (a record's, or its index's over ratings)."""
    return key in SOTOPIA_MODULES or any(key.startswith(f":{m}.") for m in SOTOPIA_MODULES)


def key_makers() -> dict[str, Callable[..., str]]:
    return {
        name: value
        for name, value in vars(keys).items()
        if inspect.isfunction(value) and value.__module__ == keys.__name__
    }


def made(maker: Callable[..., str], value: str) -> str:
    """The key `maker` makes with every argument `value` (a number where it takes one)."""
    params = inspect.signature(maker).parameters.values()
    return maker(*(7 if p.annotation in (int, "int") else value for p in params))


def test_every_key_is_under_parleys_prefix() -> None:
    constants = [v for n, v in vars(keys).items() if n.isupper() and isinstance(v, str)]
    made_keys = [
        made(maker, "x")
        for name, maker in key_makers().items()
        if name != "experiment_slot_claim"  # an idempotency key's argument, prefixed by it
    ]
    made_keys.append(keys.idempotency(keys.experiment_slot_claim("x", 7, "")))
    for key in [*constants, *made_keys]:
        assert sotopias(key) or key.startswith("parley:"), key


def test_no_two_makers_make_the_same_key() -> None:
    made_keys = {name: made(maker, "x") for name, maker in key_makers().items()}
    assert len(set(made_keys.values())) == len(made_keys), made_keys


def test_a_pair_of_agents_has_one_key_whichever_comes_first() -> None:
    assert keys.relationship_pair("a", "b") == keys.relationship_pair("b", "a")
    assert keys.relationship_pair("a", "b") != keys.relationship_pair("a", "c")


def test_a_slot_claim_names_the_previous_episode_or_the_first() -> None:
    assert keys.experiment_slot_claim("e", 2, "") != keys.experiment_slot_claim("e", 2, "ep1")
    assert keys.experiment_slot_claim("e", 2, "") != keys.experiment_slot_claim("e", 3, "")
