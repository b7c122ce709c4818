# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Obstacle speed estimation, TTC and required deceleration."""

import math

from aeb_control.obstacle import (last_point_to_brake, ObstacleTracker, predict_after,
                                  required_deceleration, time_to_collision)
import numpy as np
import pytest


def _run(tracker: ObstacleTracker, v_ego: float, v_obj: float, d0: float,
         n: int, noise: float = 0.0, seed: int = 0, dt: float = 0.05):
    rng = np.random.default_rng(seed)
    est = None
    for k in range(n):
        d = d0 + (v_obj - v_ego) * k * dt + rng.normal(0.0, noise)
        est = tracker.update(k * dt, d, v_ego)
    return est


def test_speed_of_moving_target_exact() -> None:
    """Without noise the estimate equals the true speed."""
    est = _run(ObstacleTracker(), 20.0, 5.5, 60.0, 10)
    assert est.valid
    assert est.speed == pytest.approx(5.5, abs=1e-6)
    assert est.decel == pytest.approx(0.0, abs=1e-6)


def test_median_window_rejects_outliers() -> None:
    """One bad frame moves the median estimate far less than the raw one."""
    tr = ObstacleTracker(window=5)
    for k in range(8):
        d = 50.0 - 10.0 * k * 0.05
        if k == 6:
            d += 1.0   # a 1 m outlier -> raw sample off by 20 m/s
        est = tr.update(k * 0.05, d, 10.0)
    assert abs(est.speed) < 1.0


def test_speed_with_noise_is_close() -> None:
    """5 cm range noise at 20 Hz: the median is within 1.5 m/s."""
    errors = [abs(_run(ObstacleTracker(window=7), 20.0, 5.5, 60.0, 30,
                       noise=0.05, seed=s).speed - 5.5) for s in range(20)]
    assert np.median(errors) < 0.8
    assert max(errors) < 2.0


def test_needs_min_samples_and_resets_on_jump() -> None:
    """The first frame is not valid; a jump (new obstacle) resets."""
    tr = ObstacleTracker(min_samples=2)
    assert not tr.update(0.0, 30.0, 10.0).valid
    assert not tr.update(0.05, 29.5, 10.0).valid
    assert tr.update(0.10, 29.0, 10.0).valid
    est = tr.update(0.15, 12.0, 10.0)      # a different, closer obstacle
    assert not est.valid and est.samples == 0
    assert tr.update(0.2, None, 10.0) is None
    assert tr.estimate is None


def test_braking_target_deceleration_estimated() -> None:
    """A lead braking at 6 m/s^2 is seen braking."""
    tr = ObstacleTracker(decel_window=10)
    est = None
    for k in range(15):
        t = k * 0.05
        d = 12.0 + 0.0 * t - 0.5 * 6.0 * t * t
        est = tr.update(t, d, 13.9)
    assert est.decel == pytest.approx(6.0, abs=0.5)


def test_bad_input() -> None:
    """A NaN time raises; a NaN distance means no obstacle."""
    tr = ObstacleTracker()
    with pytest.raises(ValueError):
        tr.update(math.nan, 10.0, 1.0)
    assert tr.update(0.0, math.nan, 1.0) is None
    with pytest.raises(ValueError):
        ObstacleTracker(window=0)
    with pytest.raises(ValueError, match='distance'):
        required_deceleration(math.nan, 10.0, 0.0)


def test_ttc() -> None:
    """TTC = d / closing speed; inf when opening."""
    assert time_to_collision(20.0, 15.0, 5.0) == pytest.approx(2.0)
    assert time_to_collision(20.0, 5.0, 15.0) == math.inf


def test_required_deceleration_static_and_moving() -> None:
    """v^2 / 2(d - m) for static; relative speed for a constant lead."""
    assert required_deceleration(21.0, 20.0, 0.0, margin=1.0) == \
        pytest.approx(10.0)
    assert required_deceleration(11.0, 15.0, 5.0, margin=1.0) == \
        pytest.approx(5.0)
    assert required_deceleration(11.0, 5.0, 15.0, margin=1.0) == 0.0
    assert required_deceleration(0.5, 5.0, 0.0, margin=1.0) == math.inf
    assert required_deceleration(10.0, 0.0, 0.0) == 0.0


def test_required_deceleration_braking_lead() -> None:
    """CCRb: both 13.9 m/s, 12 m gap, lead at 6 m/s^2: lead stops first."""
    v = 13.9
    a = required_deceleration(12.0, v, v, obj_decel=6.0, margin=1.0)
    s_lead = v * v / 12.0
    assert a == pytest.approx(v * v / (2.0 * (11.0 + s_lead)))
    # check by simulation: braking at a keeps >= the margin, a - 0.3 fails
    for decel, ok in ((a, True), (a - 0.3, False)):
        xe, ve, xo, vo, gap = 0.0, v, 12.0, v, 12.0
        for _ in range(4000):
            ve = max(ve - decel * 0.001, 0.0)
            vo = max(vo - 6.0 * 0.001, 0.0)
            xe += ve * 0.001
            xo += vo * 0.001
            gap = min(gap, xo - xe)
        assert (gap >= 1.0 - 0.02) == ok


def test_required_deceleration_relative_case() -> None:
    """Closing fast on a mildly braking lead: the relative formula holds."""
    a = required_deceleration(20.0, 30.0, 10.0, obj_decel=1.0, margin=0.0)
    assert a == pytest.approx(1.0 + 400.0 / 40.0)


def test_predict_after_dead_time() -> None:
    """Constant speeds for 0.3 s shrink the gap by v_rel * 0.3."""
    d, ve, vo = predict_after(30.0, 20.0, 0.0, 5.0, 0.0, 0.3)
    assert d == pytest.approx(30.0 - 4.5)
    assert (ve, vo) == (20.0, 5.0)
    d, ve, vo = predict_after(10.0, 1.0, 10.0, 0.0, 0.0, 1.0)
    assert ve == 0.0 and d == pytest.approx(10.0 - 0.05)


def test_last_point_to_brake_reference_values() -> None:
    """With a = 9, t_d = 0.3: TTC 0.61 s at 20, 1.07 at 50, 1.53 at 80 km/h."""
    for kmh, ttc in ((20, 0.61), (50, 1.07), (80, 1.53)):
        dist, t = last_point_to_brake(kmh / 3.6, 0.3, 9.0)
        assert t == pytest.approx(ttc, abs=0.01)
        assert dist == pytest.approx(t * kmh / 3.6)
    with pytest.raises(ValueError):
        last_point_to_brake(10.0, 0.3, 0.0)
