# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Remove the Fast DDS shared-memory files of processes that died (no rclpy).

Each Fast DDS participant maps a segment ``/dev/shm/fastdds_<16 hex>``
(``fastrtps_`` before Fast DDS 3) of the profile's ``segment_size`` (64 MB
with config/fastdds.xml) and listens on ports ``fastdds_port<N>``, each
with a semaphore ``sem.fastdds_port<N>_mutex``. A live owner holds a file
lock (``flock``) on the companion lock file ``<name>_el`` (or ``_sl``);
when the process is killed the files stay and nothing reclaims them. This
applies Fast DDS's own rule (``fastdds shm clean``, tools/fastdds/shm in
Fast DDS): a lock file nobody holds means its segment or port is a zombie,
and the lock file, the segment and (for ports) the mutex are removed.
Files locked by a live process are never touched; lock files younger than
``min_age`` seconds are left alone too (a participant that is still
setting up may not hold its lock yet).

:func:`remove_own_files` is for a process that must end hard (the stop
deadline of :mod:`hil_bridge.interface.node_main`): it removes the files
whose locks it holds itself (``/proc/self/fd``), which would otherwise
become zombies the moment it exits. Used by the runner (start and end of a
run) and by every node (stdlib only: onboard code may import it).
"""

import errno
import fcntl
import os
import re
import time
from typing import List, NamedTuple

SHM_DIR = '/dev/shm'
_SEGMENT_LOCK = re.compile(r'^(fastrtps|fastdds)_[0-9a-z]{16}(_el|_sl)$')
_PORT_LOCK = re.compile(r'^(fastrtps|fastdds)_port\d{1,5}(_el|_sl)$')


class CleanReport(NamedTuple):
    """What a clean-up removed and left: file names, bytes, counts in use."""

    removed: List[str]
    freed_bytes: int
    segments_in_use: int
    ports_in_use: int


def is_locked(path: str) -> bool:
    """Return True when another process holds a lock on ``path`` (flock)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as err:
        return err.errno != errno.ENOENT  # unreadable: assume it is in use
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we took
    return False


def _remove(path: str, removed: List[str]) -> int:
    try:
        size = os.stat(path).st_size
        os.remove(path)
    except OSError:
        return 0
    removed.append(os.path.basename(path))
    return size


def clean_zombies(shm_dir: str = SHM_DIR, min_age: float = 5.0) -> CleanReport:
    """Remove zombie Fast DDS segments and ports in ``shm_dir``; return a report."""
    try:
        names = os.listdir(shm_dir)
    except OSError:
        return CleanReport([], 0, 0, 0)
    removed: List[str] = []
    freed = 0
    in_use = {'segment': 0, 'port': 0}
    now = time.time()
    for name in sorted(names):
        kind = 'segment' if _SEGMENT_LOCK.match(name) else \
            'port' if _PORT_LOCK.match(name) else ''
        if not kind:
            continue
        lock = os.path.join(shm_dir, name)
        try:
            age = now - os.stat(lock).st_mtime
        except OSError:
            continue
        if age < min_age or is_locked(lock):
            in_use[kind] += 1
            continue
        base = lock[:-3]
        freed += _remove(base, removed)
        if kind == 'port':
            freed += _remove(os.path.join(shm_dir, f'sem.{os.path.basename(base)}_mutex'),
                             removed)
        _remove(lock, removed)
    return CleanReport(removed, freed, in_use['segment'], in_use['port'])


def remove_own_files(shm_dir: str = SHM_DIR) -> List[str]:
    """Remove the segments and ports whose lock files this process holds open."""
    removed: List[str] = []
    try:
        fds = os.listdir('/proc/self/fd')
    except OSError:
        return removed
    for fd in fds:
        try:
            target = os.readlink(f'/proc/self/fd/{fd}')
        except OSError:
            continue
        folder, name = os.path.split(target)
        if os.path.realpath(folder) != os.path.realpath(shm_dir):
            continue
        port = _PORT_LOCK.match(name)
        if not (port or _SEGMENT_LOCK.match(name)):
            continue
        base = target[:-3]
        _remove(base, removed)
        if port:
            _remove(os.path.join(folder, f'sem.{os.path.basename(base)}_mutex'), removed)
        _remove(target, removed)
    return removed


def main(argv: List[str] = None) -> int:
    """Command line: remove zombies in /dev/shm and print what was done."""
    report = clean_zombies()
    print(f'removed {len(report.removed)} stale Fast DDS shared-memory files '
          f'({report.freed_bytes / 1e6:.1f} MB); in use: {report.segments_in_use} '
          f'segments, {report.ports_in_use} ports')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
