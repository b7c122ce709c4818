# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The known-route follower (skidpad mode of the planner)."""

import math

from hil_bridge.bridge.low_level_control import LLCParams, LowLevelController
from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.track import (SKIDPAD_CENTRE_DISTANCE, SKIDPAD_INNER_DIAMETER,
                                        SKIDPAD_OUTER_DIAMETER)
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from hil_bridge.sim.builtin_backend import BuiltinBackend
import numpy as np
from path_planning.pure_pursuit import PursuitParams
from path_planning.route_follower import RouteFollower
import pytest

PP = PursuitParams(wheelbase=1.53, max_steer=math.radians(25.0), ld_min=3.0,
                   ld_max=8.0, ld_gain=0.4)


def _skidpad(start=(-13.0, 0.0, 0.0)) -> RouteFollower:
    return RouteFollower.skidpad(start, PP, 8.0, 6.0, 5.0)


def test_skidpad_route_geometry() -> None:
    """Two laps per side on the lane centre circles, 18.25 m apart."""
    rf = _skidpad()
    rc = (SKIDPAD_INNER_DIAMETER + SKIDPAD_OUTER_DIAMETER) / 4.0
    laps = 4 * 2 * math.pi * rc
    assert laps < rf.length < laps + 13.0 + 21.0
    d = SKIDPAD_CENTRE_DISTANCE / 2.0
    r_right = np.hypot(rf.route[:, 0], rf.route[:, 1] + d)
    r_left = np.hypot(rf.route[:, 0], rf.route[:, 1] - d)
    on_circle = np.minimum(abs(r_right - rc), abs(r_left - rc)) < 0.05
    straight = abs(rf.route[:, 1]) < 1e-6
    assert np.all(on_circle | straight)
    assert np.allclose(rf.route[0], (-13.0, 0.0), atol=0.5)


def test_route_is_placed_at_the_start_pose() -> None:
    """A car starting elsewhere gets the same route moved and turned."""
    base = _skidpad()
    moved = _skidpad((100.0, 50.0, math.pi / 2))
    assert moved.length == pytest.approx(base.length, abs=0.6)
    assert np.allclose(moved.route[0], (100.0, 50.0), atol=0.5)
    assert moved.route[10, 1] > moved.route[0, 1]  # heading +y


def test_progress_is_monotonic_through_the_crossing() -> None:
    """Driving the route point by point never jumps back a lap."""
    rf = _skidpad()
    last = -1.0
    for i in range(0, len(rf.route) - 3, 3):
        x, y = rf.route[i]
        dx, dy = rf.route[i + 1] - rf.route[i]
        cmd = rf.plan(float(x), float(y), math.atan2(dy, dx), 5.0)
        assert cmd.progress >= last
        assert cmd.progress == pytest.approx(rf.s[i], abs=0.6)
        last = cmd.progress
    end = rf.plan(*rf.route[-1], 0.0, 1.0)
    assert end.done and end.speed == 0.0


def test_bad_input() -> None:
    """Non-finite poses and degenerate routes are refused clearly."""
    rf = _skidpad()
    with pytest.raises(ValueError, match='finite'):
        rf.plan(float('nan'), 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match='route'):
        RouteFollower(np.zeros((1, 2)), PP, 8.0, 6.0, 5.0)
    with pytest.raises(ValueError, match='max_speed'):
        RouteFollower(np.zeros((3, 2)), PP, -1.0, 6.0, 5.0)


def test_skidpad_closed_loop_in_process() -> None:
    """The built-in simulator's skidpad mission finishes with no cone hit."""
    prof = load_vehicle_profile('fs_car')
    be = BuiltinBackend(seed=0, render_cameras=False)
    fr = be.setup(load_scenario('skidpad'), [])
    llc = LowLevelController(prof, LLCParams())
    p = fr.ego.pose
    pp = PursuitParams(wheelbase=prof.wheelbase, max_steer=prof.max_steer,
                       ld_min=3.0, ld_max=8.0, ld_gain=0.4)
    rf = RouteFollower.skidpad((p.x, p.y, p.yaw), pp, 8.0, 6.0, 5.0)
    while not be.referee.finished and fr.sim_time < 200.0:
        p = fr.ego.pose
        cmd = rf.plan(p.x, p.y, p.yaw, fr.ego.speed)
        control, _ = llc.update(fr.sim_time, fr.ego.speed,
                                cmd=(cmd.speed, cmd.yaw_rate, fr.sim_time))
        be.apply_control(control)
        fr = be.step(0.05)
    result = be.result.as_dict()
    be.teardown()
    assert result['status'] == 'finished' and result['laps'] == 4
    assert result['cones_hit'] == 0 and result['off_courses'] == 0
