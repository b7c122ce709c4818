# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
ROS domain leases: no two concurrent runs on one host share a ROS_DOMAIN_ID.

A lease is an exclusive ``flock`` on ``<lock_dir>/domain_<id>.lock``; the
kernel drops it when the holder exits (also on SIGKILL), so a dead run
never keeps a domain. Test processes (``test/conftest.py``), suite runs
and benchmarks take their domain here instead of drawing a random one.

Fast DDS maps domain ``d`` to UDP ports ``7400 + 250 d + ...``; ids
1..200 stay below 65535 with room for the participant offsets.
"""

import errno
import fcntl
import os
import random
import tempfile
from typing import Optional

DOMAIN_MIN = 1
DOMAIN_MAX = 200


def lock_dir() -> str:
    """Return the directory of the lock files (``$CARLA_HIL_DOMAIN_LOCKS``)."""
    path = os.environ.get('CARLA_HIL_DOMAIN_LOCKS') or os.path.join(
        tempfile.gettempdir(), 'carla_hil_domains')
    os.makedirs(path, exist_ok=True)
    return path


class DomainLease:
    """An exclusive claim on one ROS domain id; release with :meth:`release`."""

    def __init__(self, domain: int, fd: int) -> None:
        self.domain = int(domain)
        self._fd: Optional[int] = fd

    def release(self) -> None:
        """Give the domain back (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> 'DomainLease':
        """Return the lease itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Release the lease."""
        self.release()


def try_lease(domain: int) -> Optional[DomainLease]:
    """Return a lease on ``domain``, or None when another process holds it."""
    if not DOMAIN_MIN <= int(domain) <= DOMAIN_MAX:
        raise ValueError(f'ROS domain {domain} outside {DOMAIN_MIN}..{DOMAIN_MAX}')
    path = os.path.join(lock_dir(), f'domain_{int(domain)}.lock')
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EACCES):
            return None
        raise
    return DomainLease(domain, fd)


def lease_domain(lo: int = DOMAIN_MIN, hi: int = DOMAIN_MAX,
                 rng: Optional[random.Random] = None) -> DomainLease:
    """
    Lease a free domain in ``lo..hi``, starting the search at a random id.

    Raises RuntimeError when every id of the range is held.
    """
    if not DOMAIN_MIN <= lo <= hi <= DOMAIN_MAX:
        raise ValueError(f'domain range {lo}..{hi} outside {DOMAIN_MIN}..{DOMAIN_MAX}')
    ids = list(range(lo, hi + 1))
    start = (rng or random.Random()).randrange(len(ids))
    for domain in ids[start:] + ids[:start]:
        lease = try_lease(domain)
        if lease is not None:
            return lease
    raise RuntimeError(f'every ROS domain in {lo}..{hi} is leased on this host '
                       f'(lock files in {lock_dir()})')
