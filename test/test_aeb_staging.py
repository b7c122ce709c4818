# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The staged AEB state machine and the pipeline around it."""

import math

from aeb_control.aeb_core import AebCore, AebParams
from aeb_control.staging import Stage, StagingInput, StagingMachine, StagingParams
import numpy as np
import pytest

P = StagingParams(confirm_time=0.0)   # a_max 9: warn 3.6, partial 6.3,
#                                       full 7.65 m/s^2; no debounce


def _inp(t: float, a: float, speed: float = 15.0, **kw) -> StagingInput:
    base = {'t': t, 'ego_speed': speed, 'a_td': a, 'ttc': 5.0,
            'closing_speed': 5.0, 'obstacle': True}
    base.update(kw)
    return StagingInput(**base)


def test_stages_follow_required_deceleration() -> None:
    """Idle, warning, partial and full from a_td / a_max."""
    for a, stage, decel in ((1.0, Stage.IDLE, 0.0),
                            (4.5, Stage.WARNING, 0.0),
                            (6.5, Stage.PARTIAL, 1.3 * 6.5),
                            (8.0, Stage.FULL, 9.0),
                            (math.inf, Stage.FULL, 9.0)):
        out = StagingMachine(P).update(_inp(0.0, a))
        assert out.stage == stage, a
        assert out.decel == pytest.approx(decel)
        assert out.warning == (stage != Stage.IDLE)


def test_braking_needs_confirmation() -> None:
    """A one-frame spike only warns; a lasting threat brakes after 0.1 s."""
    m = StagingMachine(StagingParams(confirm_time=0.1))
    assert m.update(_inp(0.0, 8.0)).stage == Stage.WARNING
    assert m.update(_inp(0.05, 1.0)).stage == Stage.WARNING
    assert m.update(_inp(0.10, 8.0)).decel == 0.0
    assert m.update(_inp(0.15, 8.0)).decel == 0.0
    out = m.update(_inp(0.20, 8.0))
    assert out.stage == Stage.FULL and out.decel == 9.0
    # beyond the last point (a_td > a_max) there is no waiting
    m = StagingMachine(StagingParams(confirm_time=0.1))
    assert m.update(_inp(0.0, 9.5)).stage == Stage.FULL


def test_warning_from_ttc_alone() -> None:
    """A short TTC warns even when the deceleration is still low."""
    out = StagingMachine(P).update(_inp(0.0, 1.0, ttc=1.5))
    assert out.stage == Stage.WARNING


def test_partial_escalates_to_full_and_holds_until_stopped() -> None:
    """Braking is kept while closing, held at standstill, then released."""
    m = StagingMachine(P)
    assert m.update(_inp(0.0, 6.5)).stage == Stage.PARTIAL
    assert m.update(_inp(0.05, 8.0)).stage == Stage.FULL
    # the threat drops (braking works) but the car still closes: keep full
    for k in range(10):
        assert m.update(_inp(0.1 + 0.05 * k, 1.0, speed=8.0)).decel == 9.0
    out = m.update(_inp(1.0, 1.0, speed=0.1, closing_speed=0.1))
    assert out.stage == Stage.HOLD and out.decel == P.hold_decel
    assert m.update(_inp(1.5, 0.0, speed=0.0)).stage == Stage.HOLD
    out = m.update(_inp(2.0 + 1e-6, 0.0, speed=0.0))
    assert out.stage == Stage.IDLE and out.decel == 0.0
    # at standstill nothing new starts
    assert m.update(_inp(2.1, 8.0, speed=0.0)).stage == Stage.IDLE


def test_release_when_threat_is_gone() -> None:
    """Obstacle gone (lane change) for release_time: brake released."""
    m = StagingMachine(P)
    m.update(_inp(0.0, 8.0))
    assert m.update(_inp(0.05, 0.0, obstacle=False)).decel == 9.0
    assert m.update(_inp(0.2, 0.0, obstacle=False)).decel == 9.0
    out = m.update(_inp(0.36, 0.0, obstacle=False))
    assert out.decel == 0.0 and out.stage == Stage.IDLE


def test_hysteresis_against_flicker() -> None:
    """a_td jittering around the warning threshold does not flicker."""
    m = StagingMachine(P)
    thr = P.warn_ratio * P.max_decel
    stages = [m.update(_inp(0.05 * k, thr + (0.2 if k % 2 == 0 else -0.2),
                            ttc=5.0)).stage for k in range(20)]
    assert all(s == Stage.WARNING for s in stages)
    # clearly below the lowered threshold for release_time: back to idle
    stages = [m.update(_inp(1.0 + 0.05 * k, 0.5, ttc=5.0)).stage
              for k in range(10)]
    assert stages[0] == Stage.WARNING and stages[-1] == Stage.IDLE


def test_standstill_no_action() -> None:
    """A stopped car next to an obstacle does nothing."""
    out = StagingMachine(P).update(_inp(0.0, 20.0, speed=0.2))
    assert out.stage == Stage.IDLE and out.decel == 0.0


def test_driver_brake_and_kickdown_win() -> None:
    """Manual brake or kick-down releases the AEB until let go."""
    for kw in ({'driver_brake': 0.5}, {'driver_throttle': 0.95}):
        m = StagingMachine(P)
        assert m.update(_inp(0.0, 8.0)).stage == Stage.FULL
        out = m.update(_inp(0.05, 8.0, **kw))
        assert out.stage == Stage.OVERRIDE and out.decel == 0.0
        assert m.update(_inp(0.1, 8.0)).stage == Stage.FULL
    # a light throttle is not a kick-down
    out = StagingMachine(P).update(_inp(0.0, 8.0, driver_throttle=0.5))
    assert out.stage == Stage.FULL


def test_stale_input_requests_stop() -> None:
    """No input for longer than the timeout: warn and request a stop."""
    m = StagingMachine(P)
    out = m.update(_inp(0.0, 0.0, input_age=0.5))
    assert out.stage == Stage.STALE and out.warning
    assert out.decel == P.stale_decel
    out = m.update(_inp(0.05, 0.0, input_age=math.inf, speed=0.0))
    assert out.decel == P.stale_decel
    # fresh input again at standstill: hold, then idle
    assert m.update(_inp(0.1, 0.0, speed=0.0)).stage == Stage.HOLD


def test_params_checked() -> None:
    """Inconsistent thresholds raise ValueError naming the problem."""
    with pytest.raises(ValueError, match='ratio'):
        StagingParams(warn_ratio=0.8, partial_ratio=0.5)
    with pytest.raises(ValueError, match='max_decel'):
        StagingParams(max_decel=-1.0)
    with pytest.raises(ValueError, match='strategy'):
        AebParams(strategy='magic')


def _approach(core: AebCore, v: float, gap: float, steps: int):
    """Feed a static wall approached at constant speed v; return decisions."""
    wall = np.stack([np.zeros(30), np.linspace(-0.8, 0.8, 30),
                     np.full(30, -0.9)], axis=1)
    out = []
    for k in range(steps):
        t = 0.05 * k
        core.update_odometry(t, v, 0.0)
        pts = wall.copy()
        pts[:, 0] = core.params.front + gap - v * t
        out.append(core.update_cloud(t, pts))
    return out


def test_pipeline_brakes_near_last_point_not_at_3s() -> None:
    """At 50 km/h onset TTC lies between the last point and 1.5x of it."""
    core = AebCore(AebParams(mount_x=0.0, mount_z=1.9))
    v = 50 / 3.6
    out = _approach(core, v, 60.0, 80)
    onset = next(d for d in out if d.decel > 0.0)
    lp = core.last_point_ttc(v)
    assert lp <= onset.ttc <= 1.5 * lp
    assert onset.stamp == pytest.approx(out.index(onset) * 0.05)
    assert all(d.decel == 0.0 for d in out if d.ttc > 3.0)


def test_no_return_zeros_are_not_an_obstacle() -> None:
    """
    Ouster's driver writes a beam without echo as 0, 0, 0 (organised cloud).

    With the lidar ahead of the front bumper (a nose lidar) those points
    sat in the corridor at distance 0 and the AEB braked fully on an empty
    road; they are no returns (``range_min``). A real wall still brakes.
    """
    core = AebCore(AebParams(mount_x=4.0, mount_z=0.6, z_min=-0.5))
    for k in range(30):
        t = 0.05 * k
        core.update_odometry(t, 15.0, 0.0)
        pts = np.zeros((2000, 4), np.float32)
        pts[:1000, 0] = 60.0
        pts[:1000, 1] = np.linspace(-20.0, 20.0, 1000)
        d = core.update_cloud(t, pts)
    assert d.stage == 'idle' and d.decel == 0.0
    assert core.check_stale(1.5) is None
    wall = np.zeros((200, 4), np.float32)
    wall[:, 1] = np.linspace(-1.0, 1.0, 200)
    for k in range(6):                  # a wall 9 m ahead, closing at 15 m/s
        t = 1.5 + 0.05 * k
        core.update_odometry(t, 15.0, 0.0)
        wall[:, 0] = 9.0 - 0.75 * k
        d = core.update_cloud(t, np.vstack([wall, np.zeros((500, 4),
                                                           np.float32)]))
    assert d.decel > 0.0
    with pytest.raises(ValueError, match='range_min'):
        AebParams(range_min=float('nan'))


def test_empty_clouds_are_fresh_by_default() -> None:
    """Without the option an empty cloud means nothing in range, not blind."""
    core = AebCore()
    for k in range(20):
        core.update_odometry(0.05 * k, 10.0, 0.0)
        d = core.update_cloud(0.05 * k, np.zeros((0, 4), np.float32))
    assert d.stage == 'idle' and d.decel == 0.0
    assert core.check_stale(1.0) is None


def test_pipeline_nan_odometry_ignored_and_empty_cloud_is_blind() -> None:
    """A NaN speed keeps the last state; empty clouds lead to a stop."""
    core = AebCore(AebParams(empty_cloud_is_blind=True))
    assert core.update_odometry(0.0, 10.0, 0.0)
    assert not core.update_odometry(0.05, math.nan, 0.0)
    assert core.speed == 10.0
    for k in range(8):                 # never a usable cloud
        d = core.update_cloud(0.05 * k, np.zeros((0, 4), np.float32))
    assert d.stage == 'stale'
    core.update_odometry(0.4, 10.0, 0.0)
    core.update_cloud(0.4, np.array([[50.0, 2.0, 0.0]], np.float32))
    assert core.check_stale(0.45) is None
    for k in range(10):
        core.update_odometry(0.5 + 0.05 * k, 10.0, 0.0)
        d = core.update_cloud(0.5 + 0.05 * k, np.full((10, 4), np.nan))
    assert d.stage == 'stale' and d.decel > 0.0
    stale = core.check_stale(1.5)
    assert stale is not None and stale.decel > 0.0 and stale.stamp == 1.5
