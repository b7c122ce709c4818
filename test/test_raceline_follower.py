# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Following a closed line: feed-forward, feedback sign, corridor, joining, locating."""

import math

import numpy as np
from path_planning.raceline import Raceline
from path_planning.raceline_follower import FollowerParams, RacelineFollower
import pytest

L = 1.53


def _ring_line(radius: float = 10.0, v: float = 8.0) -> Raceline:
    n = int(2 * math.pi * radius / 0.5)
    t = np.linspace(0.0, 2 * math.pi, n, endpoint=False)
    xy = radius * np.column_stack([np.cos(t), np.sin(t)])
    ds = 2 * math.pi * radius / n
    return Raceline(xy=xy, s=np.arange(n) * ds, kappa=np.full(n, 1.0 / radius),
                    v=np.full(n, v), ds=ds, lap_time=2 * math.pi * radius / v, clearance=0.3)


def _params(**kw) -> FollowerParams:
    return FollowerParams(latency=0.0, **kw)


def test_on_the_line_steers_its_curvature() -> None:
    f = RacelineFollower(_ring_line(), _params())
    cmd = f.plan(10.0, 0.0, math.pi / 2, 8.0)     # on the ring, heading along it
    assert cmd.ok and cmd.reason == 'raceline'
    assert abs(cmd.lateral_error) < 0.02 and abs(cmd.heading_error) < 0.05
    assert cmd.delta == pytest.approx(math.atan(L * 0.1), abs=0.02)
    assert cmd.speed == pytest.approx(8.0) and cmd.yaw_rate == pytest.approx(8.0 * cmd.kappa)


def test_feedback_steers_back_to_the_line() -> None:
    f = RacelineFollower(_ring_line(), _params())
    left = f.plan(9.7, 0.0, math.pi / 2, 8.0)     # 0.3 m inside = left of the line
    f.reset()
    right = f.plan(10.3, 0.0, math.pi / 2, 8.0)
    assert left.lateral_error == pytest.approx(0.3, abs=0.02)
    assert right.lateral_error == pytest.approx(-0.3, abs=0.02)
    assert left.delta < math.atan(L * 0.1) < right.delta


def test_leaving_the_corridor_is_refused_after_joining() -> None:
    f = RacelineFollower(_ring_line(), _params(max_lateral_error=0.8))
    first = f.plan(11.0, 0.0, math.pi / 2, 8.0)   # starts 1 m off: joining
    assert first.ok and f.join_limit == pytest.approx(1.25, abs=0.01)
    assert first.speed <= 8.0 + 1e-9
    assert f.plan(10.05, 0.3, math.pi / 2 + 0.03, 8.0).ok
    assert f.join_limit is None                   # on the line now
    far = f.plan(10.9, 0.6, math.pi / 2, 8.0)
    assert not far.ok and 'off the line' in far.reason
    turned = f.plan(10.0, 0.8, math.pi, 8.0)
    assert not turned.ok and 'heading' in turned.reason
    assert not f.plan(math.nan, 0.0, 0.0, 1.0).ok


def test_joining_limits_the_speed() -> None:
    f = RacelineFollower(_ring_line(v=15.0), _params(join_speed_step=1.0))
    assert f.plan(10.3, 0.0, math.pi / 2, 5.0).speed == pytest.approx(6.0)


def test_sections_side_by_side_do_not_capture_the_car() -> None:
    # a long thin loop: two straights 5 m apart joined by half circles
    r, length = 2.5, 40.0
    top = np.column_stack([np.arange(0.0, length, 0.5), np.full(80, r)])
    arc1 = np.column_stack([length + r * np.sin(np.linspace(0, math.pi, 16, endpoint=False)),
                            r * np.cos(np.linspace(0, math.pi, 16, endpoint=False))])
    bottom = np.column_stack([np.arange(length, 0.0, -0.5), np.full(80, -r)])
    arc2 = np.column_stack([-r * np.sin(np.linspace(0, math.pi, 16, endpoint=False)),
                            -r * np.cos(np.linspace(0, math.pi, 16, endpoint=False))])
    xy = np.vstack([top, arc1, bottom, arc2])
    ds = float(np.hypot(*(np.roll(xy, -1, axis=0) - xy).T).mean())
    line = Raceline(xy=xy, s=np.arange(len(xy)) * ds, kappa=np.zeros(len(xy)),
                    v=np.full(len(xy), 5.0), ds=ds, lap_time=0.0, clearance=0.3)
    f = RacelineFollower(line, _params(max_lateral_error=3.0))
    f.plan(10.0, r, 0.0, 5.0)                     # on the top straight
    # drifting towards the bottom straight: still located on the top one
    for x, y in ((11.0, 1.0), (12.0, -0.2)):
        cmd = f.plan(x, y, 0.0, 5.0)
        assert 0 <= f.index < 80, f.index
    assert cmd.lateral_error < -2.0
