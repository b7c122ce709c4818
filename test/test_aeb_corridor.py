# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Corridor prediction and the closest in-corridor obstacle."""

import math

from aeb_control.corridor import (arc_coordinates, arc_points, closest_in_corridor,
                                  mount_transform, predict_corridor, to_vehicle_frame)
import numpy as np
import pytest


def _wall(x: float, y0: float = -0.8, y1: float = 0.8, z: float = 1.0,
          n: int = 20) -> np.ndarray:
    return np.stack([np.full(n, x), np.linspace(y0, y1, n),
                     np.full(n, z)], axis=1)


def test_straight_corridor_length_and_distance() -> None:
    """At 10 m/s and 4 s horizon the corridor is 40 m; distance from bumper."""
    c = predict_corridor(10.0, 0.0, half_width=1.2, front=3.7)
    assert c.kappa == 0.0
    assert c.length == pytest.approx(40.0)
    hit = closest_in_corridor(_wall(20.0), c)
    assert hit.distance == pytest.approx(16.3)
    assert hit.count == 20


def test_length_clipped_to_min_and_max() -> None:
    """Slow speeds keep min_length, fast ones max_length."""
    assert predict_corridor(0.0, 0.0, half_width=1.0, front=1.0,
                            min_length=5.0).length == 5.0
    assert predict_corridor(50.0, 0.0, half_width=1.0, front=1.0,
                            max_length=80.0).length == 80.0


def test_points_outside_width_height_or_range_are_ignored() -> None:
    """Adjacent lane, ground, overhead and beyond-range points do not count."""
    c = predict_corridor(10.0, 0.0, half_width=1.2, front=3.7)
    pts = np.vstack([_wall(20.0, 2.0, 3.0),          # adjacent lane
                     _wall(15.0, z=0.05),             # ground / road paint
                     _wall(15.0, z=4.0),              # bridge / sign
                     _wall(60.0),                     # beyond the horizon
                     _wall(-5.0)])                    # behind
    hit = closest_in_corridor(pts, c)
    assert hit.distance is None


def test_nan_rows_are_dropped() -> None:
    """Rows with NaN or inf never produce an obstacle or an error."""
    c = predict_corridor(10.0, 0.0, half_width=1.2, front=3.7)
    pts = _wall(20.0)
    bad = np.full((50, 3), np.nan)
    bad[:10, 0] = np.inf
    hit = closest_in_corridor(np.vstack([bad, pts]), c)
    assert hit.distance == pytest.approx(16.3)
    assert closest_in_corridor(bad, c).distance is None


def test_lone_noise_point_is_rejected() -> None:
    """A single return (dust) ahead of a real wall is not the obstacle."""
    c = predict_corridor(10.0, 0.0, half_width=1.2, front=3.7)
    pts = np.vstack([[[8.0, 0.0, 1.0]], _wall(20.0)])
    assert closest_in_corridor(pts, c, min_points=3).distance == \
        pytest.approx(16.3)
    assert closest_in_corridor(pts, c, min_points=1).distance == \
        pytest.approx(4.3)


def test_voxel_downsampling_counts_distinct_voxels() -> None:
    """Many returns in one voxel count once towards min_points."""
    c = predict_corridor(10.0, 0.0, half_width=1.2, front=3.7)
    same = np.tile([[10.0, 0.0, 1.0]], (30, 1))
    assert closest_in_corridor(same, c, min_points=3).distance is not None
    assert closest_in_corridor(same, c, min_points=3,
                               voxel_size=0.2).distance is None


def test_left_curve_geometry_hand_computed() -> None:
    """R = 20 m left turn: a point on the arc after 90 deg is at s = pi R/2."""
    c = predict_corridor(10.0, 0.5, half_width=1.0, front=0.0,
                         max_curvature=1.0)
    assert c.kappa == pytest.approx(0.05)
    s, d = arc_coordinates(c.kappa, np.array([20.0, 18.0]),
                           np.array([20.0, 20.0]))
    assert s[0] == pytest.approx(math.pi * 10.0)
    assert d[0] == pytest.approx(0.0, abs=1e-5)
    assert d[1] == pytest.approx(2.0)       # inside the turn = left
    hit = closest_in_corridor(np.array([[20.0, 20.0, 1.0]]), c, min_points=1)
    assert hit.distance == pytest.approx(math.pi * 10.0, rel=1e-5)


def test_right_curve_excludes_straight_ahead_obstacle() -> None:
    """Turning right, a car straight ahead at 30 m is outside the corridor."""
    c = predict_corridor(10.0, -0.5, half_width=1.2, front=3.7)
    assert c.kappa < 0.0
    assert closest_in_corridor(_wall(30.0), c).distance is None
    pts = np.array([[*arc_points(c.kappa, np.array([20.0]), dy)[0], 1.0]
                    for dy in (-0.2, 0.0, 0.2)])
    hit = closest_in_corridor(pts, c)
    assert hit.distance == pytest.approx(20.0 - 3.7, abs=1e-3)


def test_arc_coordinates_match_straight_limit() -> None:
    """For tiny curvature s -> x and d -> y."""
    x = np.array([5.0, 30.0])
    y = np.array([0.5, -1.0])
    s, d = arc_coordinates(1e-7, x, y)
    assert np.allclose(s, x, atol=1e-3)
    assert np.allclose(d, y, atol=1e-3)


def test_outline_is_closed_polygon() -> None:
    """The marker outline starts and ends at the same point."""
    c = predict_corridor(10.0, 0.2, half_width=1.0, front=3.0)
    poly = c.outline(10)
    assert poly.shape == (21, 2)
    assert np.allclose(poly[0], poly[-1])


def test_mount_transform_roof_lidar() -> None:
    """A roof lidar 1.9 m up sees the ground at z = -1.9 -> vehicle z = 0."""
    rot, trans = mount_transform(1.0, 0.0, 1.9)
    out = to_vehicle_frame(np.array([[10.0, 0.0, -1.9, 0.5]]), rot, trans)
    assert np.allclose(out, [[11.0, 0.0, 0.0]])
    rot, trans = mount_transform(yaw=math.pi / 2)
    out = to_vehicle_frame(np.array([[1.0, 0.0, 0.0]]), rot, trans)
    assert np.allclose(out, [[0.0, 1.0, 0.0]], atol=1e-6)


def test_bad_input_raises_value_error() -> None:
    """Malformed arrays and non-finite state give clear errors."""
    c = predict_corridor(10.0, 0.0, half_width=1.2, front=3.7)
    with pytest.raises(ValueError, match='points'):
        closest_in_corridor(np.zeros((5, 2)), c)
    with pytest.raises(ValueError, match='points'):
        to_vehicle_frame(np.zeros(5), np.eye(3), np.zeros(3))
    with pytest.raises(ValueError, match='speed'):
        predict_corridor(math.nan, 0.0, half_width=1.0, front=1.0)
    with pytest.raises(ValueError, match='half_width'):
        predict_corridor(1.0, 0.0, half_width=0.0, front=1.0)
    assert closest_in_corridor(np.zeros((0, 3)), c).distance is None


def test_offset_path_equals_shifted_points() -> None:
    """Prefiltering in a translated lidar frame gives the same answer."""
    rng = np.random.default_rng(1)
    pts = rng.uniform([-20, -10, -2.0], [60, 10, 1.0], (20000, 3))
    pts = np.vstack([pts, _wall(25.0, z=-1.0) - [1.3, 0.0, 0.0]])
    offset = np.array([1.3, 0.0, 1.75])
    for yaw_rate in (0.0, 0.3, -0.2):
        c = predict_corridor(12.0, yaw_rate, half_width=1.2, front=3.7)
        a = closest_in_corridor(pts + offset, c)
        b = closest_in_corridor(pts, c, offset=offset)
        assert a.distance == pytest.approx(b.distance)
        assert a.count == b.count


def test_clothoid_preview_bends_the_steering_corridor() -> None:
    """kappa_rate r: a point at y = r x^3 / 6 lies on the predicted path."""
    from aeb_control.corridor import point_curvature
    from dataclasses import replace
    base = predict_corridor(10.0, 0.0, half_width=1.0, front=0.0)
    clothoid = replace(base, kappa_rate=1e-3, preview=40.0)
    x = np.array([20.0])
    y = 1e-3 * 20.0 ** 3 / 6.0                       # 1.33 m to the left
    assert point_curvature(clothoid, x)[0] == pytest.approx(1e-3 * 20 / 3)
    _s, d = arc_coordinates(point_curvature(clothoid, x), x, np.array([y]))
    assert abs(d[0]) < 0.05
    pts = np.array([[20.0, y, 1.0]] * 3)
    assert closest_in_corridor(pts, base).distance is None      # straight
    hit = closest_in_corridor(pts, base, also=clothoid)
    assert hit.distance is None                                 # needs both
    wide = replace(base, half_width=2.0)
    hit = closest_in_corridor(pts, wide, also=clothoid)
    assert hit.distance == pytest.approx(20.0)
