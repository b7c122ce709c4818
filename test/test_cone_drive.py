# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""CONEDRIVE: hand-computed steering-range geometry and the selection rules."""

import math

from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import numpy as np
from path_planning.cone_drive import (arc_points, blocked_mask, cone_drive, ConeDriveParams,
                                      RULE_LARGEST, RULE_LEAST_CHANGE, RULE_MIXED, RULE_STOP,
                                      select_range, STATUS_OK, STATUS_STOP, steering_ranges)
import pytest

TOL = 2e-4  # rad: edge_tol 1e-4 plus rounding
P = ConeDriveParams()  # w = 0.7 + 0.15 + 0.114, front 2.3, lookahead 8


def test_params_from_profile() -> None:
    prof = load_vehicle_profile('fs_car')
    p = ConeDriveParams.from_profile(prof, lookahead=7.0)
    assert p.wheelbase == pytest.approx(1.53)
    assert p.max_steer == pytest.approx(math.radians(25.0), abs=1e-4)
    assert p.half_width == pytest.approx(0.7)
    assert p.front == pytest.approx(2.3)
    assert p.lookahead == 7.0


def test_cone_straight_ahead_blocks_symmetric_interval() -> None:
    # Cone at (8, 0). For a left turn of radius R it lies outside the
    # circle; the outer front corner sweeps radius sqrt((R + w)^2 + f^2).
    # It is hit iff 8^2 + R^2 <= (R + w)^2 + f^2, i.e.
    # R >= (64 - w^2 - f^2) / (2 w). With w = 0.964, f = 2.3:
    # R* = (64 - 0.929 - 5.29) / 1.928 = 29.97 m, delta* = atan(1.53 / R*).
    x0 = 7.9
    w, f = P.band, P.front
    r_star = (x0 ** 2 - w ** 2 - f ** 2) / (2.0 * w)
    d_star = math.atan(P.wheelbase / r_star)
    assert math.degrees(d_star) == pytest.approx(3.04, abs=0.05)
    res = cone_drive([[x0, 0.0]], 0.0, P)
    assert res.status == STATUS_OK
    assert res.free_ranges.shape == (2, 2)
    assert res.blocked_ranges.shape == (1, 2)
    lo, hi = res.blocked_ranges[0]
    assert lo == pytest.approx(-d_star, abs=TOL)
    assert hi == pytest.approx(d_star, abs=TOL)
    assert res.free_ranges[0, 0] == pytest.approx(-P.max_steer)
    assert res.free_ranges[1, 1] == pytest.approx(P.max_steer)
    # The chosen steering is the centre of a free range, never 0.
    assert abs(res.delta) == pytest.approx(0.5 * (P.max_steer + d_star),
                                           abs=TOL)


def test_cone_straight_ahead_without_front_overhang() -> None:
    # With front = 0 the band is the rear-axle path +- w: the same cone is
    # hit for R >= (x0^2 - w^2) / (2 w): a narrower interval.
    p = ConeDriveParams(front=0.0)
    x0 = 6.0
    d_star = math.atan(p.wheelbase * 2.0 * p.band / (x0 ** 2 - p.band ** 2))
    free, blocked, n_used, _ = steering_ranges(np.array([[x0, 0.0]]), p)
    assert n_used == 1
    np.testing.assert_allclose(blocked, [[-d_star, d_star]], atol=TOL)


def test_cone_on_the_left_blocks_left_angles_only() -> None:
    # Cone at (5, 2), s = +1 (left): with A = 29 - w^2 - f^2 and
    # B = 29 - w^2 the band tests are k A <= 2 (w + 2) and
    # k B >= 2 (2 - w), so k in [2 (2 - w) / B, 2 (w + 2) / A].
    # For right turns (s = -1) k A <= 2 (w - 2) < 0 never holds.
    x, y = 5.0, 2.0
    w, f = P.band, P.front
    k_lo = 2.0 * (y - w) / (x * x + y * y - w * w)
    k_hi = 2.0 * (w + y) / (x * x + y * y - w * w - f * f)
    d_lo = math.atan(P.wheelbase * k_lo)
    d_hi = math.atan(P.wheelbase * k_hi)
    assert 0.0 < d_lo < d_hi < P.max_steer
    res = cone_drive([[x, y, 0.1]], 0.0, P)
    np.testing.assert_allclose(res.blocked_ranges, [[d_lo, d_hi]], atol=TOL)
    # Straight on is free and needs no change: keep the current direction.
    assert res.rule == RULE_LEAST_CHANGE
    assert res.free_ranges[res.chosen, 0] < 0.0 < res.free_ranges[res.chosen, 1]
    mirrored = cone_drive([[x, -y]], 0.0, P)
    np.testing.assert_allclose(mirrored.blocked_ranges, [[-d_hi, -d_lo]],
                               atol=TOL)


@pytest.mark.parametrize('cone', [[9.0, 0.0], [30.0, 0.0], [-0.5, 0.0],
                                  [-3.0, 1.0], [0.0, -5.0]])
def test_cone_out_of_lookahead_or_behind_blocks_nothing(cone: list) -> None:
    # (9, 0): the straight arc reaches it after 9 m > 8 m and every curved
    # arc's band misses it; x < 0 is behind the rear axle.
    res = cone_drive([cone], 0.0, P)
    assert res.blocked_ranges.shape == (0, 2)
    np.testing.assert_allclose(res.free_ranges, [[-P.max_steer, P.max_steer]])
    assert res.delta == pytest.approx(0.0)


def test_nan_cones_dropped_and_counted() -> None:
    cones = np.array([[np.nan, 0.0], [5.0, np.inf], [7.9, 0.0]])
    res = cone_drive(cones, 0.0, P)
    assert res.n_dropped == 2
    assert res.n_cones == 1
    assert res.blocked_ranges.shape == (1, 2)


def test_empty_input_is_free() -> None:
    for empty in ([], np.zeros((0, 2)), np.zeros((0, 3))):
        res = cone_drive(empty, 0.1, P)
        assert res.status == STATUS_OK
        assert res.n_cones == 0
        assert res.delta == pytest.approx(0.0)


def test_bad_input_raises() -> None:
    with pytest.raises(ValueError, match='cones'):
        cone_drive(np.zeros(3), 0.0, P)
    with pytest.raises(ValueError, match='current_delta'):
        cone_drive([[5.0, 0.0]], float('nan'), P)
    with pytest.raises(ValueError, match='lookahead'):
        ConeDriveParams(lookahead=-1.0)
    with pytest.raises(ValueError, match='max_steer'):
        ConeDriveParams(max_steer=2.0)
    with pytest.raises(ValueError, match='margin'):
        ConeDriveParams(margin=float('nan'))


def test_wall_of_cones_stops() -> None:
    ys = np.arange(-10.0, 10.01, 0.4)
    wall = np.stack([np.full_like(ys, 3.0), ys], axis=1)
    res = cone_drive(wall, 0.0, P)
    assert res.status == STATUS_STOP
    assert res.rule == RULE_STOP
    assert res.delta == 0.0
    assert res.chosen == -1
    assert res.free_ranges.shape == (0, 2)
    np.testing.assert_allclose(res.blocked_ranges,
                               [[-P.max_steer, P.max_steer]])


def test_corridor_keeps_straight() -> None:
    x = np.arange(0.0, 20.0, 2.5)
    cones = np.concatenate([np.stack([x, np.full_like(x, 1.6)], 1),
                            np.stack([x, np.full_like(x, -1.6)], 1)])
    res = cone_drive(cones, 0.05, P)
    assert res.status == STATUS_OK
    lo, hi = res.free_ranges[res.chosen]
    assert lo < 0.0 < hi
    assert res.delta == pytest.approx(0.0, abs=TOL)
    # The centre arc really is clear of every cone by the band width.
    arc = arc_points(res.kappa, P.lookahead, 50)
    gaps = np.linalg.norm(arc[:, None, :] - cones[None], axis=2)
    assert gaps.min() > P.band - 0.01


def test_select_all_narrow_takes_largest() -> None:
    free = np.array([[-0.30, -0.29], [0.0, 0.015], [0.20, 0.21]])
    assert select_range(free, -0.295, 0.02) == (1, RULE_LARGEST)


def test_select_all_wide_takes_least_change() -> None:
    free = np.array([[-0.4, -0.2], [-0.1, 0.1], [0.2, 0.4]])
    assert select_range(free, 0.25, 0.05) == (2, RULE_LEAST_CHANGE)
    assert select_range(free, 0.16, 0.05) == (2, RULE_LEAST_CHANGE)
    assert select_range(free, 0.14, 0.05) == (1, RULE_LEAST_CHANGE)
    assert select_range(free, -0.35, 0.05) == (0, RULE_LEAST_CHANGE)
    # Tie on the distance to the range: the closer centre wins.
    tie = np.array([[-0.4, -0.1], [0.1, 0.2]])
    assert select_range(tie, 0.0, 0.05) == (1, RULE_LEAST_CHANGE)


def test_select_mixed_considers_wide_only() -> None:
    free = np.array([[-0.40, -0.39], [0.0, 0.1], [0.3, 0.305]])
    # The current angle lies in a narrow range, yet the wide one is taken.
    assert select_range(free, -0.395, 0.02) == (1, RULE_MIXED)
    assert select_range(free, 0.302, 0.02) == (1, RULE_MIXED)


def test_select_empty_stops() -> None:
    assert select_range(np.zeros((0, 2)), 0.0, 0.02) == (-1, RULE_STOP)


def test_band_matches_brute_force_swept_body() -> None:
    # Rotate the body rectangle (x in [-rear, front], |y| <= w) about the
    # turning centre through a full turn and check which cones it covers;
    # the analytic annulus must agree away from its boundary.
    p = ConeDriveParams(lookahead=200.0)
    rear = 0.6
    rng = np.random.default_rng(3)
    cones = rng.uniform([0.0, -12.0], [12.0, 12.0], (300, 2))
    for delta in (-0.4, -0.2, 0.1, 0.3):
        k = math.tan(delta) / p.wheelbase
        r = 1.0 / k
        psi = np.linspace(0.0, 2.0 * np.pi, 1441)[:, None]  # heading k s
        px, py = np.sin(psi) / k, (1.0 - np.cos(psi)) / k
        dx, dy = cones[None, :, 0] - px, cones[None, :, 1] - py
        bx = np.cos(psi) * dx + np.sin(psi) * dy
        by = -np.sin(psi) * dx + np.cos(psi) * dy
        inside = ((bx >= -rear) & (bx <= p.front) & (np.abs(by) <= p.band))
        brute = inside.any(axis=0)
        rho = np.linalg.norm(cones - np.array([0.0, r]), axis=1)
        r_in = abs(r) - p.band
        r_out = math.hypot(abs(r) + p.band, p.front)
        clear = (np.abs(rho - r_in) > 0.05) & (np.abs(rho - r_out) > 0.05)
        ours = np.array([blocked_mask(np.array([k]), cone[None], p)[0]
                         for cone in cones])
        np.testing.assert_array_equal(ours[clear], brute[clear])
        assert brute.any() and not brute.all()


def test_arc_points() -> None:
    straight = arc_points(0.0, 5.0, 6)
    np.testing.assert_allclose(straight[:, 0], np.linspace(0, 5, 6))
    left = arc_points(0.5, math.pi / 0.5, 3)  # half a circle of R = 2
    np.testing.assert_allclose(left[-1], [0.0, 4.0], atol=1e-9)


def test_colour_rule_blue_cone_blocks_passing_on_its_left() -> None:
    # Blue cone at (5, 2): the band blocks k in [k_lo, k_hi] as above; the
    # arcs with k > k_c = 2 y / (x^2 + y^2) pass it on its left (it is on
    # their right). At full lock (R = 3.28 m) its offset from the circle is
    # |(5, 2) - (0, R)| - R = 1.88 m <= side_reach and it is reached after
    # 4.3 m <= look-ahead, so everything from k_lo to full lock is blocked.
    x, y = 5.0, 2.0
    w = P.band
    d_lo = math.atan(P.wheelbase * 2.0 * (y - w) / (x * x + y * y - w * w))
    r_min = P.wheelbase / math.tan(P.max_steer)
    assert math.hypot(x, y - r_min) - r_min == pytest.approx(1.88, abs=0.01)
    res = cone_drive([[x, y]], 0.0, P, class_id=[1])
    np.testing.assert_allclose(res.blocked_ranges, [[d_lo, P.max_steer]],
                               atol=TOL)
    # Unknown or orange colours: the paper's rule only (band interval).
    plain = cone_drive([[x, y]], 0.0, P, class_id=[3])
    np.testing.assert_allclose(plain.blocked_ranges,
                               cone_drive([[x, y]], 0.0, P).blocked_ranges)
    # A yellow cone on the left blocks straight on, not full right lock.
    yel = cone_drive([[x, y]], 0.0, P, class_id=[2])
    assert yel.blocked_ranges[0, 0] < 0.0 < yel.blocked_ranges[0, 1]
    assert yel.free_ranges[0, 0] == pytest.approx(-P.max_steer)


def test_colour_rule_keeps_the_car_in_through_a_gap() -> None:
    # Left boundary with a gap between x = 0.5 and 6; the car was steering
    # 20 deg left. The paper's rule keeps 20 deg (the arc slips through the
    # gap); with colours that range is blocked and the car goes straight.
    xs = np.arange(0.0, 12.0, 2.0)
    cones = np.concatenate([[[0.5, 1.6], [6.0, 1.6], [8.0, 1.6]],
                            np.stack([xs, np.full_like(xs, -1.6)], 1)])
    cls = np.array([1, 1, 1] + [2] * xs.size)
    plain = cone_drive(cones, math.radians(20.0), P)
    assert plain.delta > math.radians(10.0)
    coloured = cone_drive(cones, math.radians(20.0), P, class_id=cls)
    assert coloured.delta == pytest.approx(0.0, abs=TOL)
    assert coloured.free_ranges.shape[0] == 1
    with pytest.raises(ValueError, match='class_id'):
        cone_drive(cones, 0.0, P, class_id=cls[:-1])
