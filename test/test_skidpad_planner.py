# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Skidpad route mode: route geometry, monotonic progress, closed loop."""

import math

from hil_bridge.low_level_control import LLCParams, LowLevelController
from hil_bridge.scenario import load_scenario
from hil_bridge.sim.builtin_backend import BuiltinBackend
from hil_bridge.sim.tracks import SKIDPAD_CENTRE_DISTANCE
from hil_bridge.vehicle_profile import load_vehicle_profile
import numpy as np
from path_planning.closed_loop import default_config
from path_planning.route_follower import RouteFollower
import pytest


def _follower(start=(-13.0, 0.0, 0.0)) -> RouteFollower:
    cfg = default_config('cone_drive')
    return RouteFollower.skidpad(start, cfg.pursuit, cfg.speed.max_speed,
                                 cfg.speed.a_lat_max, cfg.speed.decel)


def test_route_geometry() -> None:
    rf = _follower()
    route = rf.route
    d = SKIDPAD_CENTRE_DISTANCE / 2.0
    right = route[route[:, 1] < -1.0]
    left = route[route[:, 1] > 1.0]
    r_right = np.hypot(right[:, 0], right[:, 1] + d)
    r_left = np.hypot(left[:, 0], left[:, 1] - d)
    assert np.allclose(r_right, 9.125, atol=0.05)
    assert np.allclose(r_left, 9.125, atol=0.05)
    circ = 2 * math.pi * 9.125
    # 13 m entry + 2 laps each side + 20 m exit
    assert rf.length == pytest.approx(13.0 + 4 * circ + 20.0, abs=1.0)
    # the right circle first (clockwise)
    assert route[np.argmax(np.abs(route[:, 1]) > 1.0), 1] < 0.0


def test_route_placed_on_start_pose() -> None:
    rf = _follower((5.0, 2.0, math.pi / 2))
    assert np.allclose(rf.route[0], (5.0, 2.0), atol=0.5)
    assert rf.route[-1, 0] == pytest.approx(5.0, abs=0.5)
    assert rf.route[-1, 1] == pytest.approx(2.0 + 33.0, abs=0.6)


def test_progress_monotonic_through_crossing() -> None:
    rf = _follower()
    last = -1.0
    n = len(rf.route)
    for i in range(0, n - 1, 5):
        x, y = rf.route[i]
        dx, dy = rf.route[i + 1] - rf.route[i]
        cmd = rf.plan(float(x), float(y), math.atan2(dy, dx), 5.0)
        assert cmd.progress >= last
        assert cmd.progress == pytest.approx(rf.s[i], abs=1.0)
        last = cmd.progress
    end = rf.plan(*rf.route[-1], 0.0, 0.0)
    assert end.done and end.speed == 0.0


def test_bad_input() -> None:
    rf = _follower()
    with pytest.raises(ValueError):
        rf.plan(float('nan'), 0.0, 0.0, 1.0)
    with pytest.raises(ValueError):
        RouteFollower(np.zeros((1, 2)), default_config('cone_drive').pursuit,
                      8.0, 6.0, 6.0)


def test_closed_loop_finishes_skidpad() -> None:
    scn = load_scenario('skidpad')
    cfg = default_config('cone_drive')
    backend = BuiltinBackend(0, render_cameras=False)
    frame = backend.setup(scn, [])
    llc = LowLevelController(load_vehicle_profile(scn.ego.profile),
                             LLCParams())
    rf, next_plan, cmd = None, 0.0, None
    try:
        while backend.result.status == 'running':
            t, ego = frame.sim_time, frame.ego
            if t >= next_plan - 1e-9:
                pose = (ego.pose.x, ego.pose.y, ego.pose.yaw)
                if rf is None:
                    rf = RouteFollower.skidpad(
                        pose, cfg.pursuit, cfg.speed.max_speed,
                        cfg.speed.a_lat_max, cfg.speed.decel)
                out = rf.plan(*pose, ego.speed)
                cmd = (out.speed, out.yaw_rate, t)
                next_plan += 0.1
            control, _ = llc.update(t, ego.speed, cmd=cmd)
            cmd = None
            backend.apply_control(control)
            frame = backend.step(0.02)
        r = backend.result
    finally:
        backend.teardown()
    assert r.status == 'finished', r.reason
    assert r.laps == 4
    assert r.cones_hit == 0
    assert r.off_courses == 0
