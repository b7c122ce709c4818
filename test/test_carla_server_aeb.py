# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The ROS 2 AEB tutorial's CARLA calls against ``carla-hil serve``, unchanged.

``aeb_tutorial_client.py`` (plain carla, no project code) spawns the model3
and the MKZ at the tutorial's poses on the default map ``HIL_Flat``, gives
the ego 5.5 m/s, polls locations and velocities and brakes at TTC < 3 s.
The server free-runs asynchronously 5x faster than real time to keep the
test short; the client polls every 0.1 s (0.5 s of sim time). The ego
must stop short of the target without touching it.
"""

import json
import os
from pathlib import Path
import subprocess
import sys

from hil_bridge.carla_server.launcher import serve
import pytest

pytest.importorskip('carla')
HERE = Path(__file__).resolve().parent


def test_aeb_tutorial_client_stops_without_collision() -> None:
    with serve('--time-factor', '5') as s:
        out = subprocess.run(
            [sys.executable, str(HERE / 'aeb_tutorial_client.py'), '--host', '127.0.0.1',
             '--port', str(s.port), '--period', '0.1', '--duration', '20'],
            capture_output=True, text=True, timeout=60, env=dict(os.environ))
        assert out.returncode == 0, out.stderr[-2000:]
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert s.alive()
    assert result['braked_at_ttc'] is not None and 0.0 < result['braked_at_ttc'] < 3.0
    assert result['ego_speed'] < 0.01                      # it stopped
    assert result['ego_y'] == pytest.approx(28.0, abs=1e-3)  # straight on the lane
    assert result['target_x'] == pytest.approx(50.0)          # the target never moved
    # no contact: a clear gap between the bumpers at every poll and at the end
    assert result['min_gap'] > 1.0
    assert result['target_x'] - result['ego_x'] > 4.9 + 1.0
