# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The fault knobs of ``carla-hil serve``, seen through the real 0.9.16 client.

One server with ``--server-version 0.9.15 --tick-delay 0.3
--stall-sensor-after 3 --stall-sensor-role stalled``: the client reads
the fake version; a synchronous tick takes at least 0.3 s and a client
timeout shorter than that raises the client's time-out (the server lives
on); the stalled sensor's stream goes silent after 3 messages while
another sensor keeps streaming; a SIGKILL mid-run makes the next tick fail
within the client timeout.
"""

import os
import signal
import subprocess
import sys
import time

from hil_bridge.carla_server.launcher import ROOT, serve, synchronous, tick_until, wait_for
import pytest

carla = pytest.importorskip('carla')
DELAY = 0.3


@pytest.fixture(scope='module')
def server():
    """Run a slow server that stalls one sensor."""
    with serve('--server-version', '0.9.15', '--tick-delay', str(DELAY),
               '--stall-sensor-after', '3', '--stall-sensor-role', 'stalled') as s:
        client = s.client()
        world = client.get_world()
        synchronous(world, 0.05)
        yield s, client, world


def test_server_version_knob(server):
    _s, client, world = server
    assert client.get_server_version() == '0.9.15'
    assert client.get_client_version() == '0.9.16'
    assert world.get_map().name == 'Carla/Maps/HIL_Flat'


def test_slow_tick_and_client_timeout(server):
    s, client, world = server
    t0 = time.monotonic()
    frame = world.tick()
    assert time.monotonic() - t0 >= DELAY
    client.set_timeout(DELAY / 3.0)
    with pytest.raises(RuntimeError, match='time-out'):
        world.tick()
    client.set_timeout(10.0)
    time.sleep(DELAY)
    assert s.alive()
    assert world.tick() == frame + 2          # the timed-out tick did happen


def test_stalled_sensor_stream(server):
    _s, _client, world = server
    lib = world.get_blueprint_library()
    ego = world.spawn_actor(lib.find('vehicle.tesla.model3'),
                            carla.Transform(carla.Location(0.0, 0.0, 0.5)))
    got = {}
    sensors = []
    for role in ('stalled', 'healthy'):
        bp = lib.find('sensor.lidar.ray_cast')
        bp.set_attribute('role_name', role)
        bp.set_attribute('points_per_second', '2000')
        sensor = world.spawn_actor(bp, carla.Transform(carla.Location(z=1.8)),
                                   attach_to=ego)
        got[role] = []
        sensor.listen(got[role].append)
        sensors.append(sensor)
    tick_until(world, lambda: got['stalled'] and got['healthy'])
    frames = [world.tick() for _ in range(8)]
    assert wait_for(lambda: got['healthy'][-1].frame == frames[-1])
    for sensor in sensors:
        sensor.stop()
        sensor.destroy()
    ego.destroy()
    assert len(got['stalled']) == 3                  # then silent, though listened to
    assert [m.frame for m in got['healthy']][-8:] == frames
    assert max(m.frame for m in got['stalled']) < frames[-1]


def test_cli_serve_rejects_bad_options() -> None:
    for args, message in ((['--rate', '-1'], '--rate must be a finite number > 0'),
                          (['--map', 'Town01'], "map 'Town01' not found")):
        out = subprocess.run([sys.executable, '-m', 'hil_bridge.tools.cli', 'serve',
                              '--port', '0'] + args, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 2
        assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_killed_mid_run(server):
    s, client, world = server
    world.tick()
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait(5.0)
    client.set_timeout(2.0)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError):
        world.tick()
    assert time.monotonic() - t0 < 5.0


def test_a_crashed_client_leaves_no_server() -> None:
    """The launcher's server stops by itself when the process that started it dies."""
    code = ('import os\nfrom hil_bridge.carla_server.launcher import start\n'
            's = start([])\nprint(s.proc.pid, flush=True)\nos._exit(0)\n')
    out = subprocess.run([sys.executable, '-c', code], cwd=str(ROOT), capture_output=True,
                         text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().split()[2] != 'Z'        # a zombie has exited
    except OSError:
        return False
