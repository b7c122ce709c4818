# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Tearing the CARLA backend down while a sensor message is still in flight.

The real carla==0.9.16 client against ``carla-hil serve``: a camera message
is held in the client's own stream thread across ``teardown()`` (as the
GIL or a loaded machine holds it) and let go afterwards. That message
holds the client's episode; released last in the client's thread, it made
the client join its own thread and the process abort (``std::terminate``:
the Jazzy test pass died so in CI). Run in a subprocess, since the failure
is an abort. Also the keeper itself (:mod:`retired_clients`) on a fake
clock.
"""

import os
import subprocess
import sys
import threading
from typing import List

from hil_bridge.carla_backend import retired_clients
from hil_bridge.carla_server.launcher import ROOT
import pytest

#: set up, hold the next camera message in the stream thread, tear down,
#: drop the backend, then let the message go
HELD_MESSAGE_RUN = """
import gc, threading, time
from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.carla_backend.backend import CarlaBackend
from hil_bridge.carla_server.launcher import serve
from test_carla_backend_wire import rig
armed, held, gate = threading.Event(), threading.Event(), threading.Event()
make_callback = CarlaBackend._make_callback
def holding(self, slot):
    inner = make_callback(self, slot)
    def callback(data):
        if armed.is_set() and slot.sensor_id == 'cam0' and not held.is_set():
            held.set()
            gate.wait(10.0)     # data (and with it the episode) held here
        inner(data)
    return callback
CarlaBackend._make_callback = holding
with serve() as s:
    b = CarlaBackend(host='127.0.0.1', port=s.port, retry_delay=0.0,
                     sensor_timeout=0.3, max_missed=50)
    b.setup(load_scenario('aeb_tutorial'), rig(cameras=1))
    armed.set()
    b.step(0.05)
    assert held.wait(5.0), 'no camera message was held'
    b.teardown()
    del b
    gc.collect()
    gate.set()
    time.sleep(1.0)
    print('survived', flush=True)
"""


def test_a_message_in_flight_at_teardown_does_not_abort_the_process() -> None:
    """The held message is released after teardown: the process lives and exits 0."""
    pytest.importorskip('carla')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT / 'test'), str(ROOT), os.environ.get('PYTHONPATH', '')) if p))
    run = subprocess.run([sys.executable, '-c', HELD_MESSAGE_RUN], cwd=str(ROOT), env=env,
                         capture_output=True, text=True, timeout=120)
    assert 'terminate called' not in run.stderr, run.stderr[-2000:]
    assert run.returncode == 0, run.stderr[-2000:]
    assert 'survived' in run.stdout
    assert 'cam0 did not deliver' in run.stderr    # the message really was held


class _Tracked:
    """An object that records the thread it was freed in."""

    freed: List[str] = []

    def __del__(self) -> None:
        _Tracked.freed.append(threading.current_thread().name)


def test_retired_objects_are_kept_until_quiet_then_freed_by_the_caller() -> None:
    """Kept RETIRE_QUIET s; freed by a later retire() in its thread; release_all waits."""
    _Tracked.freed.clear()
    now = [1000.0]
    slept: List[float] = []
    retired_clients.release_all(clock=lambda: now[0], sleep=slept.append)
    assert retired_clients.retire(_Tracked(), None, clock=lambda: now[0]) == 0
    assert retired_clients.kept() == 1 and not _Tracked.freed
    now[0] += 0.5 * retired_clients.RETIRE_QUIET
    assert retired_clients.retire(None, clock=lambda: now[0]) == 0   # too early
    assert not _Tracked.freed

    def later() -> None:
        now[0] += retired_clients.RETIRE_QUIET
        assert retired_clients.retire(_Tracked(), clock=lambda: now[0]) == 1
    worker = threading.Thread(target=later, name='teardown-thread')
    worker.start()
    worker.join()
    assert _Tracked.freed == ['teardown-thread']
    assert retired_clients.kept() == 1
    now[0] += 0.25 * retired_clients.RETIRE_QUIET
    retired_clients.release_all(clock=lambda: now[0], sleep=slept.append)
    assert slept[-1] == pytest.approx(0.75 * retired_clients.RETIRE_QUIET)
    assert retired_clients.kept() == 0 and len(_Tracked.freed) == 2
