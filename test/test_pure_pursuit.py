# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Pure pursuit: goal point, curvature, look-ahead, speed profile."""

import math

import numpy as np
from path_planning.pure_pursuit import (arc_curvature, curvature_to, goal_point,
                                        lookahead_distance, path_curvature, profile_speed,
                                        pure_pursuit, PursuitParams, STATUS_NO_PATH, STATUS_OK)
import pytest

P = PursuitParams(wheelbase=1.53, max_steer=math.radians(25.0), ld_min=3.0,
                  ld_max=10.0, ld_gain=0.5)


def circle(radius: float, length: float = 20.0, n: int = 200) -> np.ndarray:
    th = np.linspace(0.0, length / abs(radius), n)[1:]
    return np.stack([abs(radius) * np.sin(th), radius * (1 - np.cos(th))],
                    axis=1)


def test_straight_path_no_steer() -> None:
    path = np.stack([np.linspace(1, 20, 20), np.zeros(20)], axis=1)
    res = pure_pursuit(path, 4.0, P)
    assert res.status == STATUS_OK
    assert res.delta == pytest.approx(0.0)
    assert res.lookahead == pytest.approx(5.0)
    np.testing.assert_allclose(res.goal, [5.0, 0.0], atol=1e-9)


@pytest.mark.parametrize('radius', [10.0, -10.0, 6.0])
def test_circle_gives_its_curvature(radius: float) -> None:
    # A goal on the circle through the origin tangent to x: 2y/Ld^2 = 1/R.
    res = pure_pursuit(circle(radius), 2.0, P)
    assert res.kappa == pytest.approx(1.0 / radius, rel=2e-3)
    assert res.delta == pytest.approx(math.atan(P.wheelbase / radius),
                                      rel=2e-3)
    assert np.linalg.norm(res.goal) == pytest.approx(res.lookahead, rel=1e-6)


def test_lookahead_distance() -> None:
    assert lookahead_distance(0.0, P) == 3.0
    assert lookahead_distance(-4.0, P) == 5.0
    assert lookahead_distance(100.0, P) == 10.0
    assert lookahead_distance(float('nan'), P) == 3.0


def test_short_path_uses_last_point() -> None:
    path = np.array([[0.5, 0.0], [1.0, 0.5]])
    np.testing.assert_allclose(goal_point(path, 5.0), [1.0, 0.5])


def test_steering_is_clipped() -> None:
    res = pure_pursuit(np.array([[0.5, 3.0]]), 0.0, P)
    assert res.delta == pytest.approx(P.max_steer)
    assert res.kappa == pytest.approx(math.tan(P.max_steer) / P.wheelbase)


def test_empty_and_bad_paths() -> None:
    res = pure_pursuit(np.zeros((0, 2)), 3.0, P)
    assert res.status == STATUS_NO_PATH and res.delta == 0.0
    with pytest.raises(ValueError, match='non-finite'):
        pure_pursuit(np.array([[1.0, np.nan]]), 3.0, P)
    with pytest.raises(ValueError, match='path'):
        pure_pursuit(np.zeros(3), 3.0, P)
    with pytest.raises(ValueError, match='ld_max'):
        PursuitParams(ld_min=5.0, ld_max=4.0)


def test_path_curvature() -> None:
    np.testing.assert_allclose(path_curvature(circle(8.0)), 1 / 8.0, rtol=1e-3)
    np.testing.assert_allclose(path_curvature(circle(-8.0)), 1 / 8.0,
                               rtol=1e-3)
    line = np.stack([np.arange(10.0), np.zeros(10)], axis=1)
    np.testing.assert_allclose(path_curvature(line), 0.0)
    assert path_curvature(line[:2]).shape == (2,)


def test_profile_speed() -> None:
    line = np.stack([np.linspace(1, 30, 30), np.zeros(30)], axis=1)
    assert profile_speed(line, 8.0, 6.0, 6.0) == pytest.approx(8.0)
    # Stop before the end of a 5 m path: sqrt(2 * 6 * (5 - 1)) = 6.93.
    short = line[:5]
    assert profile_speed(short, 20.0, 6.0, 6.0) == pytest.approx(
        math.sqrt(48.0))
    # A straight then an R = 4 m turn starting 10 m ahead:
    # v = sqrt(6 * 4 + 2 * 6 * 10) = 12 (lateral limit 4.9 reached in time).
    straight = np.stack([np.linspace(0.5, 10, 20), np.zeros(20)], axis=1)
    turn = circle(4.0, 6.0, 60) + np.array([10.0, 0.0])
    path = np.concatenate([straight, turn])
    v = profile_speed(path, 30.0, 6.0, 6.0, stop_at_end=False)
    assert v == pytest.approx(12.0, rel=0.02)
    assert profile_speed(np.zeros((0, 2)), 8.0, 6.0, 6.0) == 0.0


def test_closed_loop_converges_to_line() -> None:
    # Kinematic bicycle at 5 m/s, starting 0.8 m left of the line y = 0.
    x, y, yaw, v, dt = 0.0, 0.8, 0.0, 5.0, 0.05
    line = np.stack([np.linspace(-5, 200, 600), np.zeros(600)], axis=1)
    for _ in range(200):
        c, s = math.cos(yaw), math.sin(yaw)
        rel = line - np.array([x, y])
        local = np.stack([c * rel[:, 0] + s * rel[:, 1],
                          -s * rel[:, 0] + c * rel[:, 1]], axis=1)
        res = pure_pursuit(local[local[:, 0] > 0.0], v, P)
        x += v * c * dt
        y += v * s * dt
        yaw += v * math.tan(res.delta) / P.wheelbase * dt
    assert abs(y) < 0.05
    assert abs(yaw) < 0.02


@pytest.mark.parametrize('radius', [5.0, -12.0, 40.0])
def test_curvature_to_a_goal_on_a_circle(radius: float) -> None:
    """A goal on the circle tangent to the heading gives 1 / radius, any pose."""
    th = 0.7
    goal = np.array([abs(radius) * math.sin(th), radius * (1 - math.cos(th))])
    assert arc_curvature(goal) == pytest.approx(1.0 / radius)
    x, y, yaw = 3.0, -2.0, 2.1
    c, s = math.cos(yaw), math.sin(yaw)
    in_map = (x + c * goal[0] - s * goal[1], y + s * goal[0] + c * goal[1])
    assert curvature_to(in_map, x, y, yaw) == pytest.approx(1.0 / radius)
    assert arc_curvature((0.0, 0.0)) == 0.0
