# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The planning cycle without ROS: modes, fallbacks, bad input, limits."""

from dataclasses import replace
import math

import numpy as np
from path_planning.planner import ego_motion, nearest_free, Planner, PlannerConfig
from path_planning.tools.closed_loop import default_config
import pytest


def corridor(n: int = 8, half: float = 1.6) -> 'tuple[np.ndarray, np.ndarray]':
    x = np.arange(n) * 2.5 + 1.0
    xy = np.concatenate([np.stack([x, np.full(n, half)], 1),
                         np.stack([x, np.full(n, -half)], 1)])
    return xy, np.array([1] * n + [2] * n, dtype=np.uint8)


def test_cone_drive_mode_accelerates_straight() -> None:
    planner = Planner(default_config('cone_drive'))
    xy, cls = corridor()
    speeds = []
    for i in range(20):
        out = planner.plan(0.1 * i, xy, cls)  # no odometry: open-loop ramp
        speeds.append(out.speed)
        assert out.mode == 'cone_drive' and not out.stop
        assert out.delta == pytest.approx(0.0, abs=2e-4)
        assert out.yaw_rate == pytest.approx(out.speed * math.tan(out.delta)
                                             / 1.53)
    # Ramps at the acceleration limit (3 m/s^2 over 0.1 s steps).
    assert speeds[0] == 0.0
    np.testing.assert_allclose(np.diff(speeds[:10]), 0.3, atol=1e-9)
    assert out.path.shape[1] == 2 and out.path[-1, 0] > 7.0


def test_midline_mode_and_auto() -> None:
    xy, cls = corridor()
    for mode in ('midline', 'auto'):
        out = Planner(default_config(mode)).plan(0.0, xy, cls, 3.0)
        assert out.mode == 'midline'
        assert out.pursuit is not None and out.midline.ok
        assert abs(out.delta) < 1e-6
    # Unknown colours: auto falls back to cone drive, and so does midline.
    unknown = np.zeros_like(cls)
    for mode in ('midline', 'auto'):
        out = Planner(default_config(mode)).plan(0.0, xy, unknown, 3.0)
        assert out.mode == 'cone_drive'
    # Too few coloured cones for auto (min_coloured = 3 each).
    few = cls.copy()
    few[1:8] = 0
    assert Planner(default_config('auto')).plan(0.0, xy, few, 3.0).mode == \
        'cone_drive'


def test_no_cones_nan_and_behind_stop() -> None:
    planner = Planner(default_config('cone_drive'))
    xy, cls = corridor()
    planner.plan(0.0, xy, cls, 0.0)
    planner.plan(0.1, xy, cls, 0.0)
    assert planner.last_speed > 0.0
    for cones in (np.zeros((0, 3)), np.full((3, 2), np.nan),
                  np.array([[-2.0, 1.0], [-3.0, -1.0]]),
                  np.array([[25.0, 0.0], [-5.0, -0.1]])):
        out = planner.plan(0.2, cones, np.ones(cones.shape[0], np.uint8), 1.0)
        assert out.stop and out.speed == 0.0 and out.yaw_rate == 0.0
        assert out.reason == 'no_cones'
    out = planner.plan(0.3, np.full((3, 2), np.nan), np.ones(3, np.uint8))
    assert out.n_dropped == 3
    # Cones out of range or behind the field of view are counted.
    out = planner.plan(0.4, np.array([[30.0, 0.0], [-5.0, -0.1], [5.0, 1.6]]),
                       np.ones(3, np.uint8))
    assert out.n_out_of_range == 2 and out.n_used == 1


def test_wall_stops_even_without_margin() -> None:
    ys = np.arange(-8.0, 8.01, 0.4)
    wall = np.stack([np.full_like(ys, 2.5), ys], axis=1)
    out = Planner(default_config('cone_drive')).plan(0.0, wall,
                                                     np.zeros(ys.size))
    assert out.stop and out.reason == 'no_free_range'


def test_margin_relaxed_before_stopping() -> None:
    # Cones 0.9 m either side: with the margin w = 0.7 + 0.15 + 0.114 =
    # 0.964 m > 0.9 m closes the gate; without it w = 0.814 m does not.
    xy = np.array([[4.0, 0.9], [4.0, -0.9], [6.0, 0.9], [6.0, -0.9]])
    cls = np.zeros(4, dtype=np.uint8)
    out = Planner(default_config('cone_drive')).plan(0.0, xy, cls)
    assert not out.stop
    assert out.reason.endswith('_no_margin')
    assert abs(out.delta) < math.radians(1.0)


def test_pursuit_check_corrects_into_free_range() -> None:
    xy, cls = corridor()
    cfg = default_config('midline')
    planner = Planner(cfg)
    out = planner.plan(0.0, xy, cls, 3.0)
    free = out.cone_drive.free_ranges
    assert np.any((free[:, 0] <= out.delta) & (out.delta <= free[:, 1]))
    ranges = np.array([[-0.3, -0.1], [0.2, 0.4]])
    assert nearest_free(ranges, 0.0) == pytest.approx(-0.1 - math.radians(0.5))
    assert nearest_free(ranges, 0.35) == pytest.approx(0.35)
    assert nearest_free(np.array([[0.1, 0.1002]]), 0.5) == pytest.approx(
        0.1001)


def test_bad_input_and_config() -> None:
    planner = Planner(default_config('cone_drive'))
    with pytest.raises(ValueError, match='cones'):
        planner.plan(0.0, np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match='class_id'):
        planner.plan(0.0, np.zeros((4, 2)), np.zeros(3))
    with pytest.raises(ValueError, match='mode'):
        replace(default_config('auto'), mode='fast')
    with pytest.raises(ValueError, match='sensor_range'):
        PlannerConfig(sensor_range=float('nan'))
    # NaN odometry speed: the last commanded speed stands in.
    xy, cls = corridor()
    out = Planner(default_config('midline')).plan(0.0, xy, cls, float('nan'))
    assert out.mode == 'midline' and math.isfinite(out.delta)


def test_ego_motion() -> None:
    pts = np.array([[5.0, 0.0], [2.0, 1.0]])
    np.testing.assert_allclose(ego_motion(pts, 2.0, 0.0, 0.5),
                               [[4.0, 0.0], [1.0, 1.0]])
    # A quarter circle of R = 2 m to the left (1 m/s, 0.5 rad/s, pi s):
    # the new origin is old (2, 2), heading +90 deg. The turning centre
    # (0, 2) stays 2 m to the left; the old origin is 2 m behind and 2 m
    # to the left.
    dt = math.pi
    out = ego_motion(np.array([[0.0, 2.0], [0.0, 0.0]]), 1.0, 0.5, dt)
    np.testing.assert_allclose(out[0], [0.0, 2.0], atol=1e-9)
    np.testing.assert_allclose(out[1], [-2.0, 2.0], atol=1e-9)


def test_cone_memory_fills_missed_detections() -> None:
    cfg = replace(default_config('cone_drive'), memory=0.5)
    planner = Planner(cfg)
    xy, cls = corridor()
    planner.plan(0.0, xy, cls, 2.0, 0.0)
    # Next cycle: the car moved 0.2 m, half the cones were missed.
    seen = xy[::2] - np.array([0.2, 0.0])
    out = planner.plan(0.1, seen, cls[::2], 2.0, 0.0)
    assert out.n_remembered == xy.shape[0] - seen.shape[0]
    mem_xy, mem_cls, ages = planner._memory
    np.testing.assert_allclose(np.sort(mem_xy[:, 0]),
                               np.sort(xy[:, 0] - 0.2), atol=1e-9)
    assert sorted(mem_cls.tolist()) == sorted(cls.tolist())
    assert ages.max() == pytest.approx(0.1)
    # Older than the memory: forgotten.
    planner.plan(0.2, seen, cls[::2], 2.0, 0.0)
    out = planner.plan(0.8, seen, cls[::2], 2.0, 0.0)
    assert out.n_remembered == 0
    # An empty detection stops at once and clears the memory.
    out = planner.plan(0.9, np.zeros((0, 2)), np.zeros(0), 2.0, 0.0)
    assert out.stop and planner._memory is None
    # Memory off: nothing is added.
    plain = Planner(replace(cfg, memory=0.0))
    plain.plan(0.0, xy, cls, 2.0, 0.0)
    assert plain.plan(0.1, seen, cls[::2], 2.0, 0.0).n_remembered == 0


def test_no_speed_windup_while_held() -> None:
    planner = Planner(default_config('cone_drive'))
    xy, cls = corridor()
    for i in range(40):  # the car is held at standstill for 4 s
        out = planner.plan(0.1 * i, xy, cls, 0.0)
    cfg = planner.config
    assert out.speed <= cfg.speed.accel * (cfg.ramp_lead + 0.1) + 1e-9
    # Without odometry the ramp is open loop.
    blind = Planner(default_config('cone_drive'))
    for i in range(40):
        out = blind.plan(0.1 * i, xy, cls, None)
    assert out.speed > 3.0
