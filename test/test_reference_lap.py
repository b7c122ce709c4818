# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Physical reference lap: analytic straight lines and circles, referee timing."""

from dataclasses import replace
import math

from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from hil_bridge.sim import tracks as T
from hil_bridge.sim.reference_lap import (lap_time_ratios, path_curvature, profile_lap_time,
                                          reference_lap_times, speed_profile)
import numpy as np
import pytest

FS = load_vehicle_profile('fs_car')
#: No drag, no rolling resistance, no power limit: constant accelerations.
PLAIN = replace(FS, drag_coefficient=0.0, rolling_resistance=0.0,
                max_power=1e9, top_speed=200.0)


def _line(length: float, step: float = 0.05) -> np.ndarray:
    x = np.linspace(0.0, length, int(round(length / step)) + 1)
    return np.column_stack([x, np.zeros_like(x)])


def test_straight_accelerate_then_brake_is_analytic() -> None:
    """Standstill to standstill over 100 m: the triangle profile."""
    a = PLAIN.max_drive_force / PLAIN.mass      # 10 m/s^2 < grip 15
    b = PLAIN.max_decel                         # 15 m/s^2
    d = 100.0
    v_peak = math.sqrt(2.0 * d / (1.0 / a + 1.0 / b))
    expected = v_peak / a + v_peak / b
    got = profile_lap_time(_line(d), False, PLAIN, v_start=0.0, v_end=0.0)
    assert got == pytest.approx(expected, rel=2e-3)


def test_power_limited_acceleration_is_analytic() -> None:
    """Force-limited up to v1 = P/F, then v^3 grows linearly (no drag)."""
    prof = replace(PLAIN, max_power=20000.0, max_decel=30.0)
    m, f, p = prof.mass, prof.max_drive_force, prof.max_power
    v1 = p / f                                  # 8 m/s
    s1 = v1 * v1 / (2.0 * f / m)
    d = 150.0
    v2 = (v1 ** 3 + 3.0 * p * (d - s1) / m) ** (1.0 / 3.0)
    expected = v1 / (f / m) + m * (v2 ** 2 - v1 ** 2) / (2.0 * p)
    got = profile_lap_time(_line(d), False, prof)
    assert got == pytest.approx(expected, rel=3e-3)


@pytest.mark.parametrize('radius', [5.0, 9.125, 20.0])
def test_constant_circle_runs_at_sqrt_a_r(radius: float) -> None:
    """A flying lap of a circle takes 2 pi R / sqrt(a_lat R)."""
    t = np.linspace(0.0, 2.0 * math.pi, 2000, endpoint=False)
    circle = radius * np.column_stack([np.cos(t), np.sin(t)])
    expected = 2.0 * math.pi * radius / math.sqrt(PLAIN.max_lat_accel *
                                                  radius)
    assert profile_lap_time(circle, True, PLAIN) == pytest.approx(
        expected, rel=2e-3)
    kappa = path_curvature(circle, True)
    assert np.allclose(kappa, 1.0 / radius, rtol=1e-3)


def test_friction_ellipse_limits_acceleration_in_turns() -> None:
    """At 80 % of the lateral limit only 60 % of the grip drives."""
    k = 0.05                                    # 20 m radius
    v0 = math.sqrt(0.8 * PLAIN.max_lat_accel / k)
    prof = replace(PLAIN, max_drive_force=1e6)  # grip-limited drive
    v = speed_profile(0.01, np.array([k, k]), prof, v_start=v0)
    acc = (v[1] ** 2 - v0 ** 2) / (2.0 * 0.01)
    assert acc == pytest.approx(PLAIN.max_decel * 0.6, rel=1e-6)
    # and the limit speed caps it
    v = speed_profile(1.0, np.full(50, k), prof, v_start=v0)
    assert v.max() <= math.sqrt(PLAIN.max_lat_accel / k) + 1e-9


def test_top_speed_drag_and_bad_input() -> None:
    """Long straights end at top speed; bad arguments are refused."""
    v = speed_profile(1.0, np.zeros(2000), FS)
    assert v.max() == pytest.approx(FS.top_speed)
    with pytest.raises(ValueError, match='ds'):
        speed_profile(0.0, np.zeros(3), FS)
    with pytest.raises(ValueError, match='kappa'):
        speed_profile(1.0, np.array([0.0, np.nan]), FS)
    with pytest.raises(ValueError, match='laps'):
        reference_lap_times(T.random_track(1), FS, 0)


def test_acceleration_track_reference_is_timed_like_the_referee() -> None:
    """Bumper timed from the start to the finish line, from standstill."""
    track = T.acceleration_track()               # car 3 m behind the line
    a = PLAIN.max_drive_force / PLAIN.mass
    front = PLAIN.length - PLAIN.rear_overhang
    s_start = 3.0 - front                        # rear-axle travel (m)
    s_finish = 75.0 + 3.0 - front
    expected = math.sqrt(2 * s_finish / a) - math.sqrt(2 * s_start / a)
    got = reference_lap_times(track, PLAIN, 1)
    assert len(got) == 1
    assert got[0] == pytest.approx(expected, rel=5e-3)


def test_trackdrive_reference_laps() -> None:
    """Lap 1 starts from rest; laps 2..N are equal flying laps."""
    track = T.random_track(5)
    laps = reference_lap_times(track, FS, 4)
    assert len(laps) == 4
    assert laps[0] > laps[1]
    assert laps[1:] == pytest.approx([laps[1]] * 3, rel=1e-3)
    flying = profile_lap_time(track.centerline, True, FS)
    assert laps[1] == pytest.approx(flying, rel=5e-3)
    # the average speed is plausible for an FS car on a cone track
    assert 6.0 < track.length / laps[1] < FS.top_speed


def test_skidpad_reference_laps() -> None:
    """Four timed skidpad circles; each near 2 pi r / sqrt(a r)."""
    track = T.skidpad_track()
    laps = reference_lap_times(track, FS, 4)
    assert len(laps) == 4
    r = 9.125
    circle = 2 * math.pi * r / math.sqrt(FS.max_lat_accel * r)
    for lap in laps[1:3]:
        assert lap == pytest.approx(circle, rel=0.05)


def test_lap_time_ratios() -> None:
    """Ratios per lap; None where there is no reference."""
    assert lap_time_ratios([20.0, 15.0], [10.0, 10.0]) == [2.0, 1.5]
    assert lap_time_ratios([20.0, 15.0], [10.0]) == [2.0, None]
