"""What an acknowledged write survives: the fsync policy of Redis's append-only file, and the
replicas that must have a write before it is acknowledged.

`everysec` (Redis's default): Redis hands every command to the operating system (write(2))
before it answers, so a write survives the Redis process (or Parley) being killed, unless a sync
still running made Redis hold its writes back (for at most 2 s, on a disk that slow); the file
is synced to the disk once a second, so a machine that stops (a crash, a power loss) loses about
the last second of acknowledged writes. `always`: the file is synced before Redis answers,
so an acknowledged write survives that too, at the cost of a disk sync per write (bench/
bench_fsync.py measures it).

Replication is asynchronous: a primary that dies may take its last writes with it. With
`ReplicaAcks` (PARLEY_REPLICAS_ACKED), each write a client or a worker is told has happened (a
start, a turn, a status change, a judge run, a person's action: the scripts declared
`acknowledged`) is followed on its own connection by `WAIT`, and counts as done only once that
many replicas have it; one that Sentinel then promotes holds it.
"""

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import redis.asyncio as redis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from parley.storage import keys

Fsync = Literal["everysec", "always"]


@dataclass(frozen=True)
class ReplicaAcks:
    """How many replicas must hold an acknowledged write, and how long to wait for them."""

    replicas: int
    timeout: float
    """Seconds."""

    @property
    def timeout_ms(self) -> int:
        return max(1, round(self.timeout * 1000))


class NotReplicated(redis.TimeoutError):
    """Fewer replicas than asked for took a write within the timeout. The write is on the
    primary and may be lost with it: it is not acknowledged. Sending it again is safe (each
    acknowledged script applies a repeated write once) and waits for the replicas again; so it
    counts as an outage: the API answers UNAVAILABLE, a worker retries within its lease."""


_EXPECTED: weakref.WeakKeyDictionary[redis.Redis, ReplicaAcks] = weakref.WeakKeyDictionary()


def expect_acks(client: redis.Redis, acks: ReplicaAcks | None) -> None:
    """Make `client`'s acknowledged scripts wait for `acks` (None: for no replica)."""
    if acks is None or acks.replicas <= 0:
        _EXPECTED.pop(client, None)
    else:
        _EXPECTED[client] = acks


def acks_of(client: redis.Redis) -> ReplicaAcks | None:
    return _EXPECTED.get(client)


async def run_acknowledged(
    client: redis.Redis,
    acks: ReplicaAcks,
    script: AsyncScript,
    script_keys: Sequence[str],
    args: Sequence[Any],
) -> Any:
    """Run a script, then WAIT for `acks.replicas` replicas, on one connection, in one round
    trip; NotReplicated when fewer took it in time.

    WAIT counts the replicas that have everything up to this connection's last write that was
    propagated, and a script that changed nothing (a repeated write: its first run's reply was
    lost) propagates nothing. So a PUBLISH (propagated to every replica, delivered to no one)
    comes between them: the WAIT then covers the first run's write too, whichever connection
    sent it.
    """
    for _ in range(2):
        async with client.pipeline(transaction=False) as pipe:
            pipe.evalsha(script.sha, len(script_keys), *script_keys, *args)
            pipe.publish(keys.REPLICATION_PROBE, "")
            pipe.wait(acks.replicas, acks.timeout_ms)
            reply, _, count = await pipe.execute(raise_on_error=False)
        if isinstance(reply, NoScriptError):  # a new primary, or a flushed script cache
            script.sha = await client.script_load(script.script)
            continue
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(count, BaseException):
            raise count
        if int(count) < acks.replicas:
            raise NotReplicated(
                f"{count} of {acks.replicas} replicas took the write within {acks.timeout} s"
            )
        return reply
    raise NoScriptError("the script was not loaded")
