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
become zombies the moment it exits. :func:`clean_after` is for a process
that cannot (``kill -9``): a small watcher process records the lock files
its parent and the parent's children hold, and once the parent is gone
removes those nobody holds any more (:func:`start_cleaner`: ``python -m
hil_bridge.interface.dds_shm --after PID``, started by the runner and the
player). Used by the runner (start and end of a run) and by every node
(stdlib only: onboard code may import it).
"""

import errno
import fcntl
import glob
import os
import re
import subprocess
import sys
import time
from typing import Iterator, List, NamedTuple, Set, Tuple, Union

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


def _remove_entry(lock: str, port: bool, removed: List[str]) -> int:
    """Remove a zombie's lock file, its segment or port and (port) its mutex; return bytes."""
    base = lock[:-3]
    freed = _remove(base, removed)
    if port:
        freed += _remove(os.path.join(os.path.dirname(lock),
                                      f'sem.{os.path.basename(base)}_mutex'), removed)
    _remove(lock, removed)
    return freed


def held_locks(pid: Union[int, str] = 'self', shm_dir: str = SHM_DIR) -> Set[str]:
    """Return the paths of the Fast DDS lock files process ``pid`` holds open."""
    out: Set[str] = set()
    try:
        fds = os.listdir(f'/proc/{pid}/fd')
    except OSError:
        return out
    real_dir = os.path.realpath(shm_dir)
    for fd in fds:
        try:
            target = os.readlink(f'/proc/{pid}/fd/{fd}')
        except OSError:
            continue
        folder, name = os.path.split(target)
        if (_PORT_LOCK.match(name) or _SEGMENT_LOCK.match(name)) \
                and os.path.realpath(folder) == real_dir:
            out.add(target)
    return out


def child_pids(pid: int) -> Set[int]:
    """Return the pids of the children of ``pid`` (``/proc/PID/task/*/children``)."""
    out: Set[int] = set()
    for path in glob.glob(f'/proc/{int(pid)}/task/*/children'):
        try:
            with open(path, encoding='ascii') as f:
                out.update(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def _lock_files(shm_dir: str) -> Iterator[Tuple[str, str, float]]:
    """Yield (path, 'segment' or 'port', mtime in epoch s) of the Fast DDS lock files, by name."""
    try:
        names = os.listdir(shm_dir)
    except OSError:
        return
    for name in sorted(names):
        kind = 'segment' if _SEGMENT_LOCK.match(name) else \
            'port' if _PORT_LOCK.match(name) else ''
        if not kind:
            continue
        lock = os.path.join(shm_dir, name)
        try:
            made = os.stat(lock).st_mtime
        except OSError:
            continue
        yield lock, kind, made


def _late_zombies(shm_dir: str, since: float, recheck: float) -> Set[str]:
    """
    Return the lock files made at or after ``since`` (epoch s) that nobody holds.

    A file must be free on two looks ``recheck`` s apart: Fast DDS creates
    a lock file and locks it at once, so a participant being set up is
    never taken for a zombie.
    """
    out = {lock for lock, _kind, made in _lock_files(shm_dir)
           if made >= since and not is_locked(lock)}
    if out:
        time.sleep(recheck)
        out = {lock for lock in out if os.path.exists(lock) and not is_locked(lock)}
    return out


def clean_after(parent: int, shm_dir: str = SHM_DIR, period: float = 0.5,
                settle: float = 5.0) -> CleanReport:
    """
    Watch ``parent``; once it is gone, remove the Fast DDS files it left behind.

    Every ``period`` s the lock files held by ``parent`` and its children
    are recorded. When this process's parent id is no longer ``parent``
    (it exited or was killed, even with SIGKILL), the children end too
    (PR_SET_PDEATHSIG: SIGTERM, gone within a second); after at most
    ``settle`` s of waiting for them, the recorded lock files nobody holds
    any more go with their segments and ports, and so do those made while
    this watcher ran that nobody holds (a participant the parent made
    less than ``period`` s before it died was never recorded: its files
    are gone with its process's fd table). Files another live process
    holds are never touched.
    """
    me = os.getpid()
    since = time.time() - 1.0  # file times are coarse (a kernel tick)
    tracked: Set[str] = set()
    while os.getppid() == parent:
        for pid in {parent} | (child_pids(parent) - {me}):
            tracked |= held_locks(pid, shm_dir)
        time.sleep(period)
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline and \
            any(os.path.exists(p) and is_locked(p) for p in tracked):
        time.sleep(0.1)
    tracked |= _late_zombies(shm_dir, since, recheck=0.5)
    removed: List[str] = []
    freed = 0
    in_use = {True: 0, False: 0}
    for lock in sorted(tracked):
        if not os.path.exists(lock):
            continue
        port = bool(_PORT_LOCK.match(os.path.basename(lock)))
        if is_locked(lock):
            in_use[port] += 1
            continue
        freed += _remove_entry(lock, port, removed)
    return CleanReport(removed, freed, in_use[False], in_use[True])


def clean_zombies(shm_dir: str = SHM_DIR, min_age: float = 5.0) -> CleanReport:
    """Remove zombie Fast DDS segments and ports in ``shm_dir``; return a report."""
    removed: List[str] = []
    freed = 0
    in_use = {'segment': 0, 'port': 0}
    now = time.time()
    for lock, kind, made in _lock_files(shm_dir):
        if now - made < min_age or is_locked(lock):
            in_use[kind] += 1
            continue
        freed += _remove_entry(lock, kind == 'port', removed)
    return CleanReport(removed, freed, in_use['segment'], in_use['port'])


def remove_own_files(shm_dir: str = SHM_DIR) -> List[str]:
    """Remove the segments and ports whose lock files this process holds open."""
    removed: List[str] = []
    for lock in sorted(held_locks('self', shm_dir)):
        _remove_entry(lock, bool(_PORT_LOCK.match(os.path.basename(lock))), removed)
    return removed


def start_cleaner() -> subprocess.Popen:
    """
    Start ``clean_after(this process)`` in a watcher process; return it.

    Its own session (Ctrl-C of the terminal does not reach it), no output
    (a pipe it kept open would hold up whoever reads this process's
    output); it ends by itself once this process has.
    """
    return subprocess.Popen([sys.executable, '-m', 'hil_bridge.interface.dds_shm',
                             '--after', str(os.getpid())],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            close_fds=True)


def main(argv: List[str] = None) -> int:
    """
    Command line: remove zombies in /dev/shm and print what was done.

    ``--after PID`` (PID the parent of this process): :func:`clean_after`.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ['--after'] and len(argv) == 2:
        report = clean_after(int(argv[1]))
    elif argv:
        print('usage: python -m hil_bridge.tools.shm_clean [--after PID]', file=sys.stderr)
        return 2
    else:
        report = clean_zombies()
    print(f'removed {len(report.removed)} stale Fast DDS shared-memory files '
          f'({report.freed_bytes / 1e6:.1f} MB); in use: {report.segments_in_use} '
          f'segments, {report.ports_in_use} ports')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
