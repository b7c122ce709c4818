# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The bridge's modes against ``carla-hil serve`` through the real 0.9.16 client.

* lockstep: ``carla-hil run --backend carla`` of ``ci_trackdrive`` (the
  whole graph as processes over DDS, CI settings of ``test_acceptance.py``:
  ``ci_rig.yaml``, the bridge waits for each frame's ``cmd_vel`` and
  ``brake_request``): the whole lap, every frame answered, no cone hit;
* the AEB tutorial (``aeb_tutorial``: model3 at 5.5 m/s towards a
  stopped MKZ) through the whole graph, lockstep: the AEB brakes, no
  collision;
* asynchronous: the bridge alone on the AEB tutorial (``cruise``), the
  server running free, for 3 sim seconds.

The synchronous (paced) mode runs in
``test_carla_backend_faults.py::test_server_killed_mid_run_bridge_exits_3``.
CARLA has no FS car: ``fs_car`` drives as ``vehicle.micro.microlino``
(1.47 m wide; the 2.16 m wide ``vehicle.tesla.model3`` it ran as before
touched cones on the 3 m track; see docs/carla_backend.md).
"""

import json
import os
import subprocess
import sys

from hil_bridge.carla_server.launcher import ROOT, serve
import pytest

from test_acceptance import _explain, _runner_argv, CCRS_SETS, CI_SETS, run_cli  # noqa: I100

pytest.importorskip('carla')
pytestmark = [pytest.mark.closed_loop, pytest.mark.dds, pytest.mark.slow]
RESULT = '[carla-hil] result: '


@pytest.mark.one_distro
def test_trackdrive_lockstep_through_carla(ros_domain: int) -> None:
    """ci_trackdrive's lap, lockstep through the CARLA client: all frames answered, no cone."""
    with serve() as s:
        run = run_cli(_runner_argv('ci_trackdrive', CI_SETS, '--backend', 'carla', '--host',
                                   '127.0.0.1', '--port', str(s.port)))
        log = ''.join(s.log)
    assert run.code == 0, _explain(run)
    res = run.result
    assert res is not None and res['status'] == 'finished' and res['laps'] == 1, _explain(run)
    assert 'mode lockstep' in run.output and 'carla backend ready' in run.output
    assert 'vehicle.micro.microlino' in log or 'microlino' in run.output, log[-2000:]
    print(f"[test] ci_trackdrive through carla: lap {res['lap_times']}, "
          f"{res['frames']} frames, cones hit {res['cones_hit']}")
    assert res['lockstep_timeouts'] == 0, _explain(run)
    assert res['cones_hit'] == 0 and res['collisions'] == [], _explain(run)
    assert res['controller'] == {} or not res['controller'].get('rejected_cmd'), _explain(run)
    # every frame once (frame 0 also each time it was re-sent before the first reply)
    assert res['published']['/carla/ego_vehicle/lidar'] == \
        res['frames'] + 1 + res['republished_frames'], res
    assert 'Traceback' not in log, log[-3000:]


def test_aeb_tutorial_full_stack_through_carla(ros_domain: int) -> None:
    """The AEB tutorial, every node over DDS, lockstep through the CARLA client: no collision."""
    with serve() as s:
        run = run_cli(_runner_argv('aeb_tutorial', CCRS_SETS, '--backend', 'carla', '--host',
                                   '127.0.0.1', '--port', str(s.port)))
        log = ''.join(s.log)
    assert run.code == 0, _explain(run)
    res = run.result
    assert res is not None and res['mission'] == 'aeb', _explain(run)
    assert res['status'] == 'finished' and res['reason'] == 'stopped', _explain(run)
    assert res['collisions'] == [], _explain(run)
    assert 'carla backend ready' in run.output and 'mode lockstep' in run.output
    assert '-> brake_request' in run.output, _explain(run)  # the AEB stopped it
    print(f"[test] aeb_tutorial through carla: stopped at t={res.get('sim_time')}, "
          f"{res['frames']} frames, no collision")
    assert 'Traceback' not in log, log[-3000:]


def test_bridge_asynchronous_mode(ros_domain: int) -> None:
    """The server runs free (real time); the bridge takes its newest frames."""
    with serve() as s:
        args = [sys.executable, '-m', 'hil_bridge.bridge.bridge_node', '--ros-args',
                '--params-file', str(ROOT / 'config' / 'hil_bridge.yaml')]
        for key, value in (('backend', 'carla'), ('host', '127.0.0.1'), ('port', s.port),
                           ('scenario', 'aeb_tutorial'), ('rig', 'ci_rig.yaml'),
                           ('cruise', 'true'), ('synchronous_mode', 'false'),
                           ('duration', 3.0)):
            args += ['-p', f'{key}:={value}']
        out = subprocess.run(args, cwd=str(ROOT), env=dict(os.environ),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=120).stdout
    lines = [ln for ln in out.splitlines() if ln.startswith('REFEREE_RESULT ')]
    assert len(lines) == 1, out[-3000:]
    res = json.loads(lines[0][len('REFEREE_RESULT '):])
    assert 'mode async' in out, out[-3000:]
    assert res['end_reason'] == 'duration' and res['sim_time'] >= 3.0 - 1e-9, res
    # the server's frames (20 Hz): those the bridge missed are skipped
    assert res['frames'] == pytest.approx(60, abs=8), res
    published = res['published']['/carla/ego_vehicle/odometry']
    assert 10 <= published <= res['frames'] + 1, res
    assert res['collisions'] == [], res
