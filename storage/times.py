"""Times as Redis keeps them.

RedisJSON does not give back every double it is given: one that needs 17 significant digits can
come back a unit in the last place off (RedisJSON 2.8; `tests/storage/test_times.py` pins it), and
a script's cjson writes 14 significant digits. A time kept in two places (a JSON record and a
hash, a record and an event a script publishes) is the same in both only if it is one of the
values every one of them keeps exactly: a time to 14 significant digits (0.1 ms today).
"""

from typing import Annotated

from pydantic import AfterValidator


def stored_time(at: float) -> float:
    """`at` to 14 significant digits: the same after any store and read."""
    return float(f"{at:.14g}")


StoredTime = Annotated[float, AfterValidator(stored_time)]
"""A record's time, kept as `stored_time` gives it."""
