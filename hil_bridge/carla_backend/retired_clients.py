# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Where a torn-down carla client waits before this process lets it go.

Every sensor message the 0.9.16 client delivers holds a strong reference
to the client's episode, taken in the stream's own thread (LibCarla
``Simulator::SubscribeToSensor``: ``data->_episode = ep.TryLock()``). A
message in flight when its sensor stopped is released in that thread just
after the Python callback returned. Were it the client's last reference,
the client's destructor would join its own thread: ``std::terminate``
("terminate called without an active exception") and the process aborts.
Reproduced: a lidar delivering 0.3 s late, a backend torn down before the
message came, a loaded machine (the Jazzy test pass aborted in CI so).

So :meth:`CarlaBackend.teardown` never drops a client's last reference
itself: it hands the client (and its world) to :func:`retire`, which keeps
it for :data:`RETIRE_QUIET` s. A later :func:`retire` call, or the exit of
the process (at most that long after the last teardown), releases it in
the caller's thread after its streams went quiet.
"""

import atexit
import math
import threading
import time
from typing import Any, Callable, List, Tuple

#: wall seconds a torn-down client is kept (a message in flight when its
#: sensor stopped arrives within milliseconds of the server's last send)
RETIRE_QUIET = 1.0

_lock = threading.Lock()
#: (wall time retired, the objects kept)
_kept: List[Tuple[float, Tuple[Any, ...]]] = []


def retire(*objects: Any, clock: Callable[[], float] = time.monotonic) -> int:
    """
    Keep ``objects`` (a client, its world) for RETIRE_QUIET s.

    Releases, in this thread, what was retired at least RETIRE_QUIET s
    ago; returns how many entries that were. ``None`` objects are ignored.
    """
    now = clock()
    objs = tuple(o for o in objects if o is not None)
    with _lock:
        due = [entry for entry in _kept if now - entry[0] >= RETIRE_QUIET]
        _kept[:] = [entry for entry in _kept if now - entry[0] < RETIRE_QUIET]
        if objs:
            _kept.append((now, objs))
    released = len(due)
    due.clear()     # the last references go here, in the caller's thread
    return released


def kept() -> int:
    """Return how many retired entries are still kept."""
    with _lock:
        return len(_kept)


def release_all(clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> None:
    """Wait until the newest entry is RETIRE_QUIET s old, then release all (at exit)."""
    with _lock:
        newest = max((entry[0] for entry in _kept), default=None)
    if newest is not None:
        sleep(max(0.0, RETIRE_QUIET - (clock() - newest)))
    retire(clock=lambda: math.inf)      # everything is due


atexit.register(release_all)
