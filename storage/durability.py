"""What an acknowledged write survives: the fsync policy of Redis's append-only file.

`everysec` (Redis's default): Redis hands every command to the operating system (write(2))
before it answers, so a write survives the Redis process (or Parley) being killed, unless a sync
still running made Redis hold its writes back (for at most 2 s, on a disk that slow); the file
is synced to the disk once a second, so a machine that stops (a crash, a power loss) loses about
the last second of acknowledged writes. `always`: the file is synced before Redis answers,
so an acknowledged write survives that too, at the cost of a disk sync per write (bench/
bench_fsync.py measures it).
"""

from typing import Literal

Fsync = Literal["everysec", "always"]
