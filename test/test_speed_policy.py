# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Speed policy: curvature, free-range width, stopping and rate limits."""

import math

from path_planning.speed_policy import (command_speed, curvature_limit, rate_limit, SpeedParams,
                                        stopping_limit, target_speed, width_limit)
import pytest

P = SpeedParams(max_speed=8.0, min_speed=1.0, a_lat_max=6.0, accel=3.0,
                decel=6.0, narrow_width=math.radians(2.0),
                wide_width=math.radians(12.0), narrow_speed=2.0,
                stop_margin=1.0)


def test_straight_wide_open_is_max_speed() -> None:
    assert target_speed(0.0, P, width=math.radians(30.0)) == 8.0
    assert target_speed(0.0, P) == 8.0


def test_lateral_acceleration_limit() -> None:
    # R = 5 m: v = sqrt(6 * 5) = 5.477 m/s, and v^2 kappa = a_lat_max.
    v = target_speed(0.2, P)
    assert v == pytest.approx(math.sqrt(30.0))
    assert v * v * 0.2 == pytest.approx(6.0)
    assert curvature_limit(-0.2, 6.0) == pytest.approx(v)
    assert curvature_limit(0.0, 6.0) == math.inf


def test_narrow_range_is_slower() -> None:
    assert width_limit(math.radians(1.0), P) == pytest.approx(2.0)
    assert width_limit(math.radians(7.0), P) == pytest.approx(5.0)
    assert width_limit(math.radians(40.0), P) == pytest.approx(8.0)
    assert target_speed(0.0, P, width=math.radians(7.0)) == pytest.approx(5.0)
    # Monotone in the width.
    speeds = [target_speed(0.0, P, width=math.radians(w)) for w in range(20)]
    assert speeds == sorted(speeds)


def test_stopping_distance_limit() -> None:
    # 7 m clear, 1 m margin, 6 m/s^2: v = sqrt(2 * 6 * 6) = 8.49 -> capped 8;
    # 4 m clear: sqrt(36) = 6.
    assert stopping_limit(4.0, P) == pytest.approx(6.0)
    assert target_speed(0.0, P, clear=4.0) == pytest.approx(6.0)
    assert target_speed(0.0, P, clear=0.5) == 0.0
    with pytest.raises(ValueError, match='clear'):
        stopping_limit(float('nan'), P)


def test_rate_limits() -> None:
    assert rate_limit(8.0, 2.0, 0.1, P) == pytest.approx(2.3)
    assert rate_limit(0.0, 2.0, 0.1, P) == pytest.approx(1.4)
    assert rate_limit(2.1, 2.0, 0.1, P) == pytest.approx(2.1)
    assert rate_limit(5.0, float('nan'), 0.1, P) == pytest.approx(0.3)
    assert rate_limit(5.0, 1.0, -1.0, P) == pytest.approx(1.0)
    assert rate_limit(-3.0, 0.1, 1.0, P) == 0.0


def test_stop_is_immediate() -> None:
    assert command_speed(True, 0.0, 7.0, 0.1, P) == 0.0
    assert command_speed(False, 0.0, 7.0, 0.1, P) == pytest.approx(7.3)


def test_min_speed_floor() -> None:
    # Very tight curve: the lateral limit is below min_speed, the floor wins.
    assert target_speed(100.0, P) == pytest.approx(1.0)


def test_bad_values() -> None:
    with pytest.raises(ValueError, match='kappa'):
        target_speed(float('nan'), P)
    with pytest.raises(ValueError, match='width'):
        target_speed(0.0, P, width=float('inf'))
    with pytest.raises(ValueError, match='max_speed'):
        SpeedParams(max_speed=0.0)
    with pytest.raises(ValueError, match='wide_width'):
        SpeedParams(narrow_width=0.2, wide_width=0.1)
    with pytest.raises(ValueError, match='min_speed'):
        SpeedParams(max_speed=2.0, min_speed=3.0)
