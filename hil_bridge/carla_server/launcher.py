# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Start ``carla-hil serve`` as a child process (tests, benchmarks, scripts).

``carla.Client.get_world()`` holds the Python GIL while it waits for the
server, so a client must never run the server in its own process.
:func:`serve` starts one on free ports (``--port 0`` unless the arguments
name a port), waits for its ready line and yields a :class:`Served` with
the ports; the process is stopped (SIGTERM, then SIGKILL) on exit, and
stops by itself within a second when the process that started it dies
(``--exit-with-parent``: a client that crashes, as the 0.9.16 client does
on a second ``listen()``, leaves no server behind). Its output is drained
into ``Served.log`` (the last 200 lines).
"""

import collections
import contextlib
import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Deque, Iterator, List, Optional

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r'ready on port (\d+) \(streaming (\d+)\)')


class Served:
    """A running server: ``port``, ``streaming_port``, ``proc``."""

    def __init__(self, proc: subprocess.Popen, port: int,
                 streaming_port: int) -> None:
        self.proc = proc
        self.port = port
        self.streaming_port = streaming_port
        self.log: Deque[str] = collections.deque(maxlen=200)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        """Keep reading the server's output (a full pipe would block it)."""
        try:
            for line in self.proc.stdout:
                self.log.append(line)
        except (OSError, ValueError):
            pass

    def client(self, timeout: float = 10.0):
        """Return a connected ``carla.Client`` with ``timeout`` seconds."""
        import carla
        c = carla.Client('127.0.0.1', self.port)
        c.set_timeout(timeout)
        return c

    def alive(self) -> bool:
        """Return True while the server process runs."""
        return self.proc.poll() is None


def start(args: List[str], ready_timeout: float = 60.0) -> Served:
    """
    Start ``python -m hil_bridge.carla_server.server [--port 0] *args``.

    Raises ``RuntimeError`` with the server's output when it does not get
    ready within ``ready_timeout`` seconds.
    """
    env = dict(os.environ)
    env['PYTHONPATH'] = f'{ROOT}{os.pathsep}{env.get("PYTHONPATH", "")}'
    env['PYTHONUNBUFFERED'] = '1'
    port = [] if '--port' in args else ['--port', '0']
    proc = subprocess.Popen(
        [sys.executable, '-m', 'hil_bridge.carla_server.server', '--exit-with-parent']
        + port + list(args), cwd=str(ROOT), env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + ready_timeout
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        lines.append(line)
        m = READY.search(line)
        if m:
            return Served(proc, int(m.group(1)), int(m.group(2)))
    stop(proc)
    raise RuntimeError('carla-hil serve did not start:\n' + ''.join(lines))


def stop(proc: subprocess.Popen) -> Optional[int]:
    """Stop the server process (SIGTERM, then SIGKILL); return its code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5.0)
    return proc.returncode


@contextlib.contextmanager
def serve(*args: str) -> Iterator[Served]:
    """Run a server for the ``with`` block."""
    s = start(list(args))
    try:
        yield s
    finally:
        stop(s.proc)


@contextlib.contextmanager
def served_world(*args: str, delta: Optional[float] = 0.05) -> Iterator[tuple]:
    """
    Run a server and yield ``(served, client, world)`` for the ``with`` block.

    ``delta`` (s): synchronous mode with that fixed delta (None: leave the
    server asynchronous); asynchronous again on exit.
    """
    with serve(*args) as s:
        client = s.client()
        world = client.get_world()
        if delta is not None:
            synchronous(world, delta)
        yield s, client, world
        if s.alive():
            restore_async(client)


def destroy_all(client, world) -> None:
    """Destroy every actor but the spectator; advance until the client sees it."""
    import carla
    ids = [a.id for a in world.get_actors() if a.type_id != 'spectator']
    client.apply_batch_sync([carla.command.DestroyActor(i) for i in ids])
    if world.get_settings().synchronous_mode:
        world.tick()
    else:
        world.wait_for_tick(2.0)        # get_actors() reads the newest snapshot
        world.wait_for_tick(2.0)


def blueprint(world, name: str, **attrs: object):
    """Return the blueprint ``name`` with attributes set (values as strings)."""
    bp = world.get_blueprint_library().find(name)
    for k, v in attrs.items():
        bp.set_attribute(k, str(v))
    return bp


def synchronous(world, delta: Optional[float] = 0.05) -> None:
    """
    Switch a ``carla.World`` to synchronous mode with a fixed delta (s).

    ``delta`` None (asynchronous mode, variable delta) restores the
    server's start-up settings.
    """
    settings = world.get_settings()
    settings.synchronous_mode = delta is not None
    settings.fixed_delta_seconds = delta
    world.apply_settings(settings)


def restore_async(client) -> None:
    """Put the server back into asynchronous mode (test tear-down)."""
    synchronous(client.get_world(), None)


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``predicate`` every 10 ms for up to ``timeout`` s; return its last value."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def tick_until(world, predicate: Callable[[], bool], max_ticks: int = 100,
               timeout: float = 20.0) -> List[int]:
    """
    Tick a synchronous world until ``predicate()`` holds; return the frames.

    Each tick gives the streams 50 ms to deliver before the check; raises
    ``TimeoutError`` after ``max_ticks`` ticks or ``timeout`` seconds.
    """
    frames: List[int] = []
    deadline = time.monotonic() + timeout
    while not predicate():
        if len(frames) >= max_ticks or time.monotonic() > deadline:
            raise TimeoutError(f'condition not met after {len(frames)} ticks')
        frames.append(world.tick())
        wait_for(predicate, 0.05)
    return frames


def record(world, sensor, ticks: int, until: Optional[Callable[[list], bool]] = None
           ) -> list:
    """
    Listen to ``sensor`` on a synchronous world; return the data it sent.

    Without ``until``: ticks until the stream delivers (a stream connects
    asynchronously after ``listen``), then ``ticks`` more, and waits for
    the data of the last one. With ``until(data)``: ticks until it holds,
    at most ``ticks`` times (e.g. a collision).
    """
    got: list = []
    sensor.listen(got.append)
    try:
        if until is not None:
            wait_for(lambda: False, 0.5)       # the stream connects
            for _ in range(int(ticks)):
                world.tick()
                if wait_for(lambda: until(got), 0.02):
                    break
            return got
        tick_until(world, lambda: bool(got))
        last = 0
        for _ in range(int(ticks)):
            last = world.tick()
        wait_for(lambda: got[-1].frame >= last)
        return got
    finally:
        sensor.stop()
