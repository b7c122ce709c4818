# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Faults on the wire: the CARLA backend and the bridge against a faulty ``carla-hil serve``.

One server with the fault knobs ``--server-version 0.9.15 --tick-delay
0.3 --stall-sensor-after 3 --stall-sensor-role lidar --stall-sensor-frames
6`` for the backend (version warning naming both versions, a slow tick
reported as slow, a stalled stream no longer waited for, then delivering
again), one with ``--sensor-delay 0.3 --delay-sensor-role lidar
--corrupt-sensor-role bad`` (a late sensor waited for, one later than
``sensor_timeout`` named and its data dropped as stale, malformed images
dropped), and one killed by SIGKILL under a running bridge process (exit 3
with a message naming the server, within ``reconnect_timeout``).
"""

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import List

from hil_bridge.bridge.backend import BackendError
from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.carla_backend.backend import CarlaBackend, SlowServer
from hil_bridge.carla_server.launcher import ROOT, serve
import pytest

from test_carla_backend_wire import rig  # noqa: I100 - test helper next to this file

pytest.importorskip('carla')
DELAY = 0.3


@pytest.fixture(scope='module')
def faulty():
    """Run a server that claims 0.9.15, ticks slowly and stalls the lidar."""
    with serve('--server-version', '0.9.15', '--tick-delay', str(DELAY),
               '--stall-sensor-after', '3', '--stall-sensor-role', 'lidar',
               '--stall-sensor-frames', '6') as s:
        yield s


@pytest.fixture(scope='module')
def late():
    """Run a server that sends the lidar's data 0.3 s late and corrupts 'bad''s images."""
    with serve('--sensor-delay', str(DELAY), '--delay-sensor-role', 'lidar',
               '--corrupt-sensor-role', 'bad') as s:
        yield s


def make(s, **kwargs) -> CarlaBackend:
    kwargs.setdefault('retry_delay', 0.0)
    return CarlaBackend(host='127.0.0.1', port=s.port, **kwargs)


def test_version_mismatch_names_both_versions(faulty, caplog) -> None:
    caplog.set_level(logging.WARNING)
    backend = make(faulty)
    backend.connect()
    assert backend.server_version == '0.9.15' and backend.client_version == '0.9.16'
    warned = [r.getMessage() for r in caplog.records if 'versions differ' in r.getMessage()]
    assert len(warned) == 1 and '0.9.16' in warned[0] and '0.9.15' in warned[0]


def test_slow_server_is_slow_not_lost(faulty) -> None:
    """A tick longer than the client timeout: SlowServer; the run goes on after it."""
    backend = make(faulty, timeout=5.0)
    try:
        backend.setup(load_scenario('aeb_tutorial'), [])
        backend.set_timeout(DELAY / 3.0)
        with pytest.raises(SlowServer, match='is slow.*not lost'):
            backend.step(0.05)
        assert backend.stats['slow_ticks'] == 1 and faulty.alive()
        backend.set_timeout(5.0)
        time.sleep(DELAY)
        frame = backend.step(0.05)
        assert frame.frame >= 2                      # the slow tick did happen
    finally:
        backend.set_timeout(5.0)
        backend.teardown()


def test_stalled_sensor_stream(faulty, caplog) -> None:
    """
    The lidar's stream goes silent after 3 messages (the camera's goes on), for 6 frames.

    Each frame waits ``sensor_timeout`` for it and says so, ``max_missed``
    times; then frames go out without waiting (an error names the sensor)
    until it delivers again.
    """
    caplog.set_level(logging.INFO)
    backend = make(faulty, sensor_timeout=0.3, max_missed=2, timeout=5.0)
    warned: List[int] = []
    with_lidar: List[bool] = []
    try:
        frame = backend.setup(load_scenario('aeb_tutorial'), rig(cameras=1))
        with_lidar.append('lidar' in frame.sensors)
        for _ in range(25):
            frame = backend.step(0.05)
            assert 'cam0' in frame.sensors
            with_lidar.append('lidar' in frame.sensors)
            if any(e.kind == 'warning' for e in frame.events):
                warned.append(frame.frame)
            if with_lidar[-1] and False in with_lidar:
                assert frame.sensors['lidar'].frame == frame.frame
                break
    finally:
        backend.teardown()
    gone = with_lidar.index(False)
    assert with_lidar[:gone].count(True) <= 3
    assert with_lidar[-1] is True and with_lidar[gone:-1].count(True) == 0   # back
    assert len(warned) == 2 and warned == sorted(warned)
    assert 'sensor lidar missed 2 frames in a row' in caplog.text
    assert 'sensor lidar delivers again' in caplog.text
    assert backend.stats['sensor_missing'] == 2


def _cameras(*ids: str) -> List:
    from hil_bridge.interface.rig import parse_rig
    return parse_rig({'sensors': [
        {'id': i, 'blueprint': 'sensor.camera.rgb', 'mount': {'x': 0.5, 'z': 1.0},
         'attributes': {'image_size_x': 64, 'image_size_y': 48}} for i in ids]}, '<test>')


def test_late_sensor_is_waited_for(late) -> None:
    """The lidar's data arrives 0.3 s after its frame: the frame waits for it."""
    backend = make(late, sensor_timeout=2.0)
    try:
        backend.setup(load_scenario('aeb_tutorial'), rig(cameras=1))
        t0 = time.monotonic()
        frame = backend.step(0.05)
        assert time.monotonic() - t0 >= DELAY - 0.01
        assert set(frame.sensors) == {'cam0', 'lidar'}
        assert all(r.frame == frame.frame for r in frame.sensors.values())
        assert not [e for e in frame.events if e.kind == 'warning']
    finally:
        backend.teardown()


def test_too_late_is_named_and_dropped_as_stale(late, caplog) -> None:
    """Later than sensor_timeout: the frame goes without it, named; the late data is stale."""
    caplog.set_level(logging.WARNING)
    backend = make(late, sensor_timeout=0.1, max_missed=50)
    try:
        backend.setup(load_scenario('aeb_tutorial'), rig(cameras=1))
        frame = backend.step(0.05)
        assert set(frame.sensors) == {'cam0'}
        warn = [e for e in frame.events if e.kind == 'warning']
        assert warn and warn[0].data['missing_sensors'] == ['lidar']
        assert any('lidar' in r.getMessage() and 'did not deliver' in r.getMessage()
                   for r in caplog.records)
        time.sleep(DELAY + 0.1)                      # the late data arrives now
        backend.step(0.05)
        assert backend._assembler.stats['stale'] >= 1
    finally:
        backend.teardown()


def test_malformed_sensor_data_is_dropped(late, caplog) -> None:
    """'bad''s images say they are one pixel wider than their data: dropped, counted, named."""
    caplog.set_level(logging.ERROR)
    backend = make(late, sensor_timeout=0.2, timeout=1.0, max_missed=1)
    try:
        backend.setup(load_scenario('aeb_tutorial'), _cameras('good', 'bad'))
        frame = backend.step(0.05)
        assert set(frame.sensors) == {'good'}
        assert frame.sensors['good'].data.shape == (48, 64, 3)
        assert backend.stats['bad_data'] >= 1
        assert any('bad' in r.getMessage() and 'malformed' in r.getMessage()
                   for r in caplog.records)
    finally:
        backend.teardown()


def test_server_killed_mid_run_bridge_exits_3(ros_domain: int) -> None:
    """SIGKILL the server under a running bridge: exit 3 naming it, within reconnect_timeout."""
    reconnect = 3.0
    with serve() as s:
        args = [sys.executable, '-m', 'hil_bridge.bridge.bridge_node', '--ros-args',
                '--params-file', str(ROOT / 'config' / 'hil_bridge.yaml')]
        for key, value in (('backend', 'carla'), ('host', '127.0.0.1'), ('port', s.port),
                           ('scenario', 'aeb_tutorial'), ('rig', 'ci_rig.yaml'),
                           ('cruise', 'true'), ('timeout', 2.0),
                           ('reconnect_timeout', reconnect)):
            args += ['-p', f'{key}:={value}']
        proc = subprocess.Popen(args, cwd=str(ROOT), env=dict(os.environ),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: List[str] = []
        ready = threading.Event()

        def read() -> None:
            for line in proc.stdout:
                lines.append(line)
                if 'carla backend ready' in line:
                    ready.set()
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert ready.wait(90.0), ''.join(lines)[-3000:]
            time.sleep(1.0)                            # mid-run
            s.proc.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            rc = proc.wait(timeout=60.0)
            took = time.monotonic() - killed
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(5.0)
    out = ''.join(lines)
    assert rc == 3, out[-3000:]
    assert f'lost the CARLA server at 127.0.0.1:{s.port}' in out, out[-3000:]
    print(f'[test] bridge exit {took:.1f} s after the SIGKILL')
    # tick time-out (2 s) + reconnect_timeout + shutdown: not minutes
    assert took < 2.0 + reconnect + 10.0, out[-3000:]


def test_lost_then_restarted_server_is_reported(caplog) -> None:
    """
    A killed server is lost (not slow); one restarted on the port is reported.

    After the loss no call goes into the client (it would hold the GIL for
    its time-out): the TCP probe answers. A new server on the same port is
    a new episode: the run cannot go on, and says so.
    """
    with serve() as s:
        port, streaming = s.port, s.streaming_port
        backend = make(s, timeout=1.0)
        backend.setup(load_scenario('aeb_tutorial'), [])
        backend.step(0.05)
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait(5.0)
        with pytest.raises(BackendError, match=f'lost the CARLA server at 127.0.0.1:{port}'):
            backend.step(0.05)
        with pytest.raises(BackendError, match='refuses connections'):
            backend.step(0.05)
        try:
            with serve('--port', str(port), '--streaming-port', str(streaming)):
                with pytest.raises(BackendError, match='back after it was lost.*new episode'):
                    backend.step(0.05)
                caplog.set_level(logging.WARNING)
                backend.teardown()                   # logs what it could not destroy
                assert any('destroy' in r.getMessage() for r in caplog.records)
        finally:
            backend.teardown()
